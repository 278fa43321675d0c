import type { HostLimits } from '../config/limits.js';
import type { IsolationReport } from '../process/isolationReport.js';
import type { RunnerLaunch } from '../process/spawnRunner.js';
import type { Containment } from '../runs/superviseRun.js';
import { RunCgroup, joinCgroupsPrefix, type CgroupApplied } from './cgroups.js';
import { bwrapArgs, EGRESS, GATEWAY } from './bwrapArgs.js';

export { EGRESS, GATEWAY };
import { probeMachine, type MachineReport } from './probe.js';
import { diskQuotaLines, type DiskApplied } from './runDiskQuota.js';

/** The sandbox backends. */
export const BACKENDS = ['process', 'bwrap'] as const;
/** A sandbox backend name. */
export type Backend = (typeof BACKENDS)[number];

/** Resource limits a sandbox applies to the whole run. */
export type SandboxLimits = Pick<HostLimits, 'memoryBytes' | 'pids' | 'cpuSeconds' | 'fileSizeBytes' | 'openFiles' | 'diskBytes' | 'inodes'>;

/** What one run's sandbox must allow. Paths are host paths; nothing else is visible under bwrap. */
export interface SandboxRequest {
  backend: Backend;
  runId: string;
  /** The runner's own command line, environment and working directory (the workspace root). */
  launch: RunnerLaunch;
  /** The run's workspace: the only writable place. */
  workspace: string;
  /** Host paths the runner needs to read (its folder, its bundle, the host's node_modules). */
  readOnly: string[];
  /** Granted directories bound at a path inside the workspace (mount mode). */
  binds: { source: string; target: string; readOnly: boolean }[];
  limits: SandboxLimits;
  /** Host end of the run's egress proxy, bound into the sandbox (bwrap only); absent: no network. */
  egressSocket?: string;
  /** Host end of the run's gateway socket, bound into the sandbox (bwrap only). */
  gatewaySocket?: string;
  /** What the egress proxy allows (for the report). */
  egress?: { allow: string[]; allowPrivate: boolean };
  /** The quota filesystems mounted for this run (for the report); absent: none could be. */
  disk?: DiskApplied;
}

/** A launch wrapped in its sandbox, what the sandbox enforces, and what holds the process tree. */
export interface PreparedSandbox {
  launch: RunnerLaunch;
  report: IsolationReport;
  containment?: Containment;
}

/** `prlimit` options for the per-process limits (RLIMIT_CPU, RLIMIT_FSIZE, RLIMIT_NOFILE). */
function prlimitArgs(limits: SandboxLimits): string[] {
  return ['prlimit', `--cpu=${limits.cpuSeconds}`, `--fsize=${limits.fileSizeBytes}`, `--nofile=${limits.openFiles}`, '--'];
}

/**
 * The runner's command line behind socat bridges: each serves a host socket bound into the
 * sandbox on a loopback port of the sandbox's own network namespace. The runner starts only once
 * every bridge listens (read from /proc/net/tcp), so its first connection never races the bridge.
 */
function bridgeCommand(bridges: { socket: string; port: number }[], command: string[]): string[] {
  const script = bridges
    .map((b) => {
      const listening = `0100007F:${b.port.toString(16).toUpperCase().padStart(4, '0')} 00000000:0000 0A`;
      return `socat TCP-LISTEN:${b.port},bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:${b.socket} & p=$!; until grep -q '${listening}' /proc/net/tcp; do kill -0 $p 2>/dev/null || { echo "paddock: the bridge to ${b.socket} did not start" >&2; exit 127; }; sleep 0.005; done;`;
    })
    .join(' ');
  return ['/bin/sh', '-c', `${script} exec "$@"`, 'paddock-bridge', ...command];
}

/**
 * What a backend enforces with these limits on this machine (used for every run view and for
 * `explain`): computed from the mechanisms that actually applied, never from configuration.
 * `disk`: the run's mounted quota filesystems, `'none'` for a run that has none, absent for a
 * binding not running yet (then what this machine would mount).
 */
export function isolationReport(backend: Backend, l: SandboxLimits, machine: MachineReport, applied: CgroupApplied, egress?: { allow: string[]; allowPrivate: boolean }, disk?: DiskApplied | 'none'): IsolationReport {
  const enforced: string[] = [];
  const notEnforced: string[] = [];
  const limit = (ok: string | undefined | false, text: string, how: string) => (ok ? enforced.push(`${text} (${how})`) : notEnforced.push(`${text}: no mechanism on this host`));
  if (backend === 'bwrap') {
    enforced.push(
      'own user, pid, mount, network, ipc, uts and cgroup namespaces; all capabilities dropped; uid/gid 65534 inside',
      'filesystem: only the run workspace is writable; read-only system paths (/usr, a few /etc files), the runner folder and node_modules; nothing else of the host is visible',
      egress && egress.allow.length
        ? `network: only through the host egress proxy, to ${egress.allow.join(', ')}; names resolved by the host; private and loopback addresses ${egress.allowPrivate ? 'allowed' : 'refused'}; every destination audited`
        : 'network: none (own network namespace with only loopback)',
      'the whole process tree dies with the run (pid namespace), setsid escapees included',
    );
  } else {
    enforced.push('own session and process group, killed (SIGTERM, then SIGKILL) at run end and confirmed through /proc');
    notEnforced.push(
      'filesystem isolation: the runner can read and write whatever the host user can (a read-only mount is only a symlink)',
      'network isolation: the runner can open any connection',
    );
  }
  enforced.push(
    'environment built from an allowlist: no host secrets or tokens',
    'handshake, wall-clock, idle and cancel-grace timeouts; stdout, stderr, line, update-count and event-byte quotas',
    "runner requests checked against the run's projection (run id, method, model, knowledge base, MCP server and tool) and its rate, count and size limits",
  );
  limit(applied.memory, `memory ≤ ${l.memoryBytes} bytes for the whole run`, applied.memory ?? '');
  limit(applied.pids, `at most ${l.pids} processes`, applied.pids ?? '');
  limit(machine.prlimit.available && 'prlimit', `CPU time ≤ ${l.cpuSeconds} s per process, files ≤ ${l.fileSizeBytes} bytes, ≤ ${l.openFiles} open files`, 'RLIMIT_CPU/FSIZE/NOFILE via prlimit');
  const diskLines = diskQuotaLines(l, machine.diskQuota, backend, disk);
  enforced.push(...diskLines.enforced);
  notEnforced.push(...diskLines.notEnforced);
  if (backend === 'process') limit(applied.killAll, 'descendants that call setsid are killed at run end', applied.killAll ?? '');
  return { backend, strength: backend === 'bwrap' ? 'strong' : 'weak', enforced, notEnforced };
}

/**
 * Wrap a runner launch in its sandbox. Fails closed: asking for bwrap on a machine without it
 * throws (the caller refuses the run); limits that cannot be applied are listed as NOT enforced.
 */
export function prepareSandbox(input: SandboxRequest, machine: MachineReport = probeMachine()): PreparedSandbox {
  let request = input;
  if (request.backend === 'bwrap' && !machine.bwrap.available) {
    throw new Error(`the bwrap sandbox is not available on this host: ${machine.bwrap.why}`);
  }
  const cgroup = RunCgroup.create(request.runId, { memoryBytes: request.limits.memoryBytes, pids: request.limits.pids });
  const applied = cgroup?.applied ?? {};
  const bwrap = request.backend === 'bwrap';
  const bridged = bwrap && request.egressSocket;
  const bridges = bwrap ? [...(request.egressSocket ? [EGRESS] : []), ...(request.gatewaySocket ? [GATEWAY] : [])] : [];
  const inner = bridges.length > 0 ? bridgeCommand(bridges, [request.launch.command, ...request.launch.args]) : [request.launch.command, ...request.launch.args];
  if (bridged) {
    const proxy = `http://127.0.0.1:${EGRESS.port}`;
    request = { ...request, launch: { ...request.launch, env: { ...request.launch.env, HTTP_PROXY: proxy, HTTPS_PROXY: proxy, http_proxy: proxy, https_proxy: proxy } } };
  }
  const wrapped = [
    ...joinCgroupsPrefix(cgroup?.procsFiles ?? []),
    ...(machine.prlimit.available ? prlimitArgs(request.limits) : []),
    ...(request.backend === 'bwrap' ? [machine.bwrap.path!, ...bwrapArgs(request, inner)] : inner),
  ];
  const [command, ...args] = wrapped;
  // A run without quota filesystems is reported as such, whatever the machine could do.
  const report = isolationReport(request.backend, request.limits, machine, applied, bridged ? request.egress : undefined, request.disk ?? 'none');
  const containment: Containment | undefined = cgroup
    ? {
        killAll: (ms) => cgroup.killAll(ms),
        killNow: () => cgroup.killNow(),
        release: () => cgroup.release(),
        notes: () => [
          ...(cgroup.oomKills() > 0 ? [`the memory limit (${request.limits.memoryBytes} bytes) killed ${cgroup.oomKills()} process(es)`] : []),
          ...(cgroup.pidsLimitHits() > 0 ? [`the pids limit refused ${cgroup.pidsLimitHits()} process(es)`] : []),
        ],
      }
    : undefined;
  return { launch: { ...request.launch, command: command!, args }, report, containment };
}
