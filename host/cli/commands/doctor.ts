import type { HostConfig } from '../../config/hostConfig.js';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { openDatabaseReadOnly } from '../../state/db.js';
import { readStoredSpecs } from '../../state/configRepo.js';
import { doctorReport, missingSecretLines, SECRET_HOLDING_KINDS } from '../../ops/doctor.js';
import { probeMachine } from '../../sandbox/probe.js';

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
    return missingSecretLines(readStoredSpecs(db, SECRET_HOLDING_KINDS));
  } catch (error) {
    return [`could not read the configuration in ${path}: ${(error as Error).message}`];
  } finally {
    db.close();
  }
}

/** `paddock doctor`: which backends and limits work on this machine, and why not. Exit 0 always. */
export function doctorCommand(config: HostConfig, flags: { json: boolean }, out: Out): number {
  const report = doctorReport(config, storedMissingSecrets(config.dataDir), probeMachine(true));
  const { machine, backends, harnesses, identity, missingSecrets } = report;
  if (flags.json) {
    out(JSON.stringify(report));
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
