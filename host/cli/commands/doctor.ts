import { probeMachine } from '../../sandbox/probe.js';
import { BACKENDS, sandboxBackend } from '../../sandbox/backend.js';
import type { HostConfig } from '../../config/hostConfig.js';
import { harnessReports } from '../../harness/harnesses.js';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { openDatabaseReadOnly } from '../../state/db.js';
import { readStoredSpecs } from '../../state/configRepo.js';
import type { KnowledgeBaseResource, McpServerResource, ModelResource } from '../../bindings/schema.js';
import { describeMissingRef, missingSecretRefs } from '../../secrets/hostSecrets.js';
import { runIdentityReport } from '../../sandbox/identityReport.js';

type Out = (text: string) => void;

/**
 * Secret references of the data folder's stored resources that do not resolve in this
 * environment (read-only; nothing when there is no database yet).
 */
function storedMissingSecrets(dataDir: string): string[] {
  const path = join(dataDir, 'paddock.db');
  if (!existsSync(path)) return [];
  const db = openDatabaseReadOnly(path);
  try {
    const rows = readStoredSpecs(db, ['model', 'knowledgeBase', 'mcpServer']);
    const of = <T>(kind: string) => rows.filter((r) => r.kind === kind).map((r) => r.spec as T);
    return missingSecretRefs({
      models: of<ModelResource>('model'),
      knowledgeBases: of<KnowledgeBaseResource>('knowledgeBase'),
      mcpServers: of<McpServerResource>('mcpServer'),
    }).map(describeMissingRef);
  } catch (error) {
    return [`could not read the configuration in ${path}: ${(error as Error).message}`];
  } finally {
    db.close();
  }
}

/** `paddock doctor`: which backends and limits work on this machine, and why not. Exit 0 always. */
export function doctorCommand(config: HostConfig, flags: { json: boolean }, out: Out): number {
  const machine = probeMachine();
  // Every backend this machine can run, with what it would enforce here.
  const backends = Object.fromEntries(
    BACKENDS.map(sandboxBackend)
      .filter((b) => b.available(machine).ok)
      .map((b) => [b.name, b.report(config.limits, machine, machine.cgroups)]),
  );
  const harnesses = harnessReports();
  const missingSecrets = storedMissingSecrets(config.dataDir);
  const identity = runIdentityReport(machine.identity, config.dataDir);
  if (flags.json) {
    out(JSON.stringify({ machine, backends, harnesses, identity, missingSecrets }));
    return 0;
  }
  const yes = (ok: unknown) => (ok ? 'yes' : 'NO ');
  const escapees = '— setsid escapees of the process backend survive; bwrap still kills them (pid namespace)';
  const prlimits = 'prlimit (RLIMIT_CPU, RLIMIT_FSIZE, RLIMIT_NOFILE)';
  const quota = () =>
    `${machine.diskQuota.mechanism} per workspace and session folder (${machine.diskQuota.tools!.mkfs})`;
  out(
    [
      `bwrap backend:     ${yes(machine.bwrap.available)} ` +
        `${machine.bwrap.available ? `${machine.bwrap.version} at ${machine.bwrap.path}` : `— ${machine.bwrap.why}`}`,
      `memory limit:      ${yes(machine.cgroups.memory)} ` +
        `${machine.cgroups.memory ?? `— ${machine.cgroups.why ?? 'no memory controller'}`}`,
      `pids limit:        ${yes(machine.cgroups.pids)} ` +
        `${machine.cgroups.pids ?? `— ${machine.cgroups.why ?? 'no pids controller'}`}`,
      `kill whole tree:   ${yes(machine.cgroups.killAll)} ${machine.cgroups.killAll ?? escapees}`,
      `CPU/file/fd limits: ${yes(machine.prlimit.available)} ` +
        `${machine.prlimit.available ? prlimits : `— ${machine.prlimit.why}`}`,
      `disk/inode quota: ${yes(machine.diskQuota.available)} ` +
        `${machine.diskQuota.available ? quota() : `— ${machine.diskQuota.why}`}`,
      `egress bridge:     ${yes(machine.socat.available)} ` +
        `${machine.socat.available ? 'socat' : '— apt-get install socat'}`,
      `run identity:      ${yes(identity.ok)} ${identity.summary}`,
      ...identity.warnings.map((w) => `  WARNING: ${w}`),
      ...harnesses.map(
        (h) =>
          `${`${h.name} CLI:`.padEnd(19)}${yes(h.found && !h.problem)} ` +
          `${h.version ? `${h.version} at ${h.path}` : `— ${h.problem}`}`,
      ),
      `secret references: ${missingSecrets.length === 0 ? 'all resolve' : `${missingSecrets.length} MISSING`}`,
      ...missingSecrets.map((m) => `  MISSING: ${m}`),
      '',
      ...Object.entries(backends).flatMap(([name, report]) => [
        `${name} (${report.strength}):`,
        ...report.enforced.map((g) => `  enforced: ${g}`),
        ...report.notEnforced.map((g) => `  NOT enforced: ${g}`),
      ]),
    ].join('\n'),
  );
  return 0;
}
