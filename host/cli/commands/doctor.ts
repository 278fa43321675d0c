import { probeMachine } from '../../sandbox/probe.js';
import { isolationReport } from '../../sandbox/prepare.js';
import type { HostConfig } from '../../config/hostConfig.js';
import { harnessReports } from '../../harness/harnesses.js';

type Out = (text: string) => void;

/** `paddock doctor`: which backends and limits work on this machine, and why not. Exit 0 always. */
export function doctorCommand(config: HostConfig, flags: { json: boolean }, out: Out): number {
  const machine = probeMachine();
  const backends = {
    process: isolationReport('process', config.limits, machine, machine.cgroups),
    ...(machine.bwrap.available ? { bwrap: isolationReport('bwrap', config.limits, machine, machine.cgroups) } : {}),
  };
  const harnesses = harnessReports();
  if (flags.json) {
    out(JSON.stringify({ machine, backends, harnesses }));
    return 0;
  }
  const yes = (ok: unknown) => (ok ? 'yes' : 'NO ');
  out(
    [
      `bwrap backend:     ${yes(machine.bwrap.available)} ${machine.bwrap.available ? `${machine.bwrap.version} at ${machine.bwrap.path}` : `— ${machine.bwrap.why}`}`,
      `memory limit:      ${yes(machine.cgroups.memory)} ${machine.cgroups.memory ?? `— ${machine.cgroups.why ?? 'no memory controller'}`}`,
      `pids limit:        ${yes(machine.cgroups.pids)} ${machine.cgroups.pids ?? `— ${machine.cgroups.why ?? 'no pids controller'}`}`,
      `kill whole tree:   ${yes(machine.cgroups.killAll)} ${machine.cgroups.killAll ?? '— setsid escapees of the process backend survive; bwrap still kills them (pid namespace)'}`,
      `CPU/file/fd limits: ${yes(machine.prlimit.available)} ${machine.prlimit.available ? 'prlimit (RLIMIT_CPU, RLIMIT_FSIZE, RLIMIT_NOFILE)' : `— ${machine.prlimit.why}`}`,
      `disk/inode quota: ${yes(machine.diskQuota.available)} ${machine.diskQuota.available ? `${machine.diskQuota.mechanism} per workspace and session folder (${machine.diskQuota.tools!.mkfs})` : `— ${machine.diskQuota.why}`}`,
      `egress bridge:     ${yes(machine.socat.available)} ${machine.socat.available ? 'socat' : '— apt-get install socat'}`,
      ...harnesses.map((h) => `${`${h.name} CLI:`.padEnd(19)}${yes(h.found && !h.problem)} ${h.version ? `${h.version} at ${h.path}` : `— ${h.problem}`}`),
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
