import type { HostConfig } from '../../config/hostConfig.js';
import { readStoredSpecs } from '../../state/configRepo.js';
import { checkState, describeState, hideDatabaseUrl, openStateReadOnly } from '../../state/stateLocation.js';
import { doctorReport, missingSecretLines, SECRET_HOLDING_KINDS } from '../../ops/doctor.js';
import { probeMachine } from '../../sandbox/probe.js';

type Out = (text: string) => void;

/**
 * Secret references of the stored resources that do not resolve in this environment (read-only; nothing when there is
 * no database yet or it cannot be reached: the state check says why).
 */
function storedMissingSecrets(config: HostConfig): string[] {
  let db;
  try {
    db = openStateReadOnly(config);
  } catch {
    return [];
  }
  if (!db) return [];
  try {
    return missingSecretLines(readStoredSpecs(db, SECRET_HOLDING_KINDS));
  } catch (error) {
    const why = hideDatabaseUrl(config, (error as Error).message);
    return [`could not read the configuration in ${describeState(config)}: ${why}`];
  } finally {
    db.close();
  }
}

/** `paddock doctor`: the state store, which backends and limits work on this machine, and why not. Exit 0 always. */
export function doctorCommand(config: HostConfig, flags: { json: boolean }, out: Out): number {
  const state = checkState(config);
  const report = { state, ...doctorReport(config, storedMissingSecrets(config), probeMachine(true)) };
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
      `state store:       ${yes(state.ok)} ${state.where} — ${state.detail}`,
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
