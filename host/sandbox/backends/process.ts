import type { NetworkFacts, SandboxBackend } from '../backend.js';
import { assembleReport, containedLaunch } from '../contain.js';

/** The host user, as the process backend's reports name it (`who`: the runner, as the sentence calls it). */
function hostUser(who: string): string {
  const uid = process.getuid?.();
  return `uid ${uid ?? '?'}${uid === 0 ? `, root: whatever ${who} writes is root's, setuid bits included` : ''}`;
}

/**
 * The process backend: the runner is a child process of the host user in its own session and
 * process group, in the run's cgroup when there is one. No filesystem, network or identity
 * isolation, and every report says so.
 */
export const processBackend: SandboxBackend = {
  name: 'process',
  strength: 'weak',
  available: () => ({ ok: true }),
  runIdentity: () => undefined,
  hostIdentity: () => `the host user (${hostUser('the runner')}) — the process backend does not change identity`,
  bindsGrants: false,
  gatewayOnSocket: false,
  stdoutFifo: false,
  // Nothing of the run is in the process's view when it starts: its folders are reached by path.
  warmSlots: true,
  // The runner has the host's network anyway: a proxy would only suggest a boundary there is not.
  startsEgressProxy: () => false,
  describeNetwork: (n: NetworkFacts) =>
    `any destination the host can reach (the process backend has no network sandbox)` +
    `${n.allow.length ? `; the egress allowlist (${n.allow.join(', ')}) is NOT enforced` : ''}`,
  report(limits, machine, applied, net = { proxy: false, allow: [], allowPrivate: false }, disk) {
    const own = {
      enforced: [
        'own session and process group, killed (SIGTERM, then SIGKILL) at run end and confirmed through /proc',
      ],
      notEnforced: [
        `a separate identity: the runner runs as the host user (${hostUser('it')})`,
        'filesystem isolation: the runner can read and write whatever the host user can (a read-only mount is ' +
          'only a symlink)',
        `network isolation: ${this.describeNetwork(net)}`,
        "containment of the process tree: the runner has the host user's rights, so a descendant can move " +
          "itself out of the run's cgroup (e.g. into the root cgroup) as well as its group and session; at run " +
          "end such a process is found and killed only while its environment still holds the run's " +
          'PADDOCK_RUN_ID',
      ],
      privateTmp: [],
      unbounded: [
        'disk: the process backend can write wherever the host user can (e.g. /tmp); only the workspace and ' +
          'the session folder are bounded',
      ],
      reportsKillAll: true,
    };
    return assembleReport(this, own, limits, machine, applied, this.describeNetwork(net), disk);
  },
  launchBinds: () => undefined,
  prepare(request, machine) {
    return containedLaunch(this, request, machine, () => ({
      runner: request.launch,
      proxy: false,
      undo: () => undefined,
    }));
  },
};
