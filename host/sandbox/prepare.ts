import { execFileSync } from 'node:child_process';
import { chownSync, rmSync } from 'node:fs';
import type { HostLimits } from '../config/limits.js';
import type { IsolationReport } from '../process/isolationReport.js';
import type { RunnerLaunch } from '../process/spawnRunner.js';
import type { Containment } from '../runs/superviseRun.js';
import { RunCgroup, type CgroupApplied } from './cgroups.js';
import { bindsOf, bwrapOptions, EGRESS, GATEWAY, STDOUT_FIFO, type SandboxBind } from './bwrapArgs.js';
import { hostLaunch } from './launcher.js';
import { dedicatedUserns, identityWarnings, usernsPrefix, USERNS_FD, type RunIdentity } from './runIdentity.js';

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
  /** The binding's egress allowlist (for the report; enforced only when `egressSocket` is set). */
  egress?: { allow: string[]; allowPrivate: boolean };
  /**
   * bwrap only: give the runner its stdout through a FIFO opened by its own exec, not the pipe
   * bwrap's processes inherit, so a runner that closes stdout is seen at once (bwrap's monitor
   * and pid 1 would hold an inherited pipe open until the wall clock).
   */
  stdoutFifo?: boolean;
  /** The quota filesystems mounted for this run (for the report); absent: none could be. */
  disk?: DiskApplied;
}

/** A launch wrapped in its sandbox, what the sandbox enforces, and what holds the process tree. */
export interface PreparedSandbox {
  /** The host-side launch: helpers by absolute path, the host's fixed environment. */
  launch: RunnerLaunch;
  /** Remove the launch's private file if the launch is never started. */
  discard(): void;
  /** Under bwrap: every bind and link of the launch, read from its options (for the audit and `explain`). */
  binds?: SandboxBind[];
  report: IsolationReport;
  containment?: Containment;
  /** The host uid/gid the sandbox's 65534 is (bwrap only): what the run's files are owned by. */
  identity?: RunIdentity;
}

/**
 * `prlimit` (by the absolute path the probe found) with the per-process limits (RLIMIT_CPU, RLIMIT_FSIZE,
 * RLIMIT_NOFILE).
 */
function prlimitArgs(path: string, limits: SandboxLimits): string[] {
  return [path, `--cpu=${limits.cpuSeconds}`, `--fsize=${limits.fileSizeBytes}`, `--nofile=${limits.openFiles}`, '--'];
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

/** What a run's network mechanism is: the backend, whether its egress proxy runs, and the proxy's allowlist. */
export interface NetworkFacts {
  /** The host egress proxy is started and bridged into the sandbox. */
  proxy: boolean;
  /** The binding's `network.egress` allowlist (enforced only when `proxy`). */
  allow: string[];
  allowPrivate: boolean;
}

/**
 * Whether a run gets the host egress proxy: bwrap only (the process backend has the host's network), and only with an
 * allowlist.
 */
export function startsEgressProxy(backend: Backend, network: { egress: string[] }): boolean {
  return backend === 'bwrap' && network.egress.length > 0;
}

/**
 * The one description of a run's network, from the mechanism (backend, proxy started or not, its
 * allowlist). Explain, the run headers, `--json` and the audit's `run.spawned` all show this string.
 */
export function networkDescription(backend: Backend, n: NetworkFacts): string {
  if (backend === 'process') {
    return `any destination the host can reach (the process backend has no network sandbox)${n.allow.length ? `; the egress allowlist (${n.allow.join(', ')}) is NOT enforced` : ''}`;
  }
  if (!n.proxy) return 'none: own network namespace with only loopback';
  return `only through the host egress proxy, to ${n.allow.join(', ')}; names resolved by the host; private and loopback addresses ${n.allowPrivate ? 'allowed' : 'refused'}; every destination audited`;
}

const NO_NETWORK: NetworkFacts = { proxy: false, allow: [], allowPrivate: false };

/**
 * What a backend enforces with these limits on this machine (used for every run view and for
 * `explain`): computed from the mechanisms that actually applied, never from configuration.
 * `disk`: the run's mounted quota filesystems, `'none'` for a run that has none, absent for a
 * binding not running yet (then what this machine would mount).
 */
export function isolationReport(backend: Backend, l: SandboxLimits, machine: MachineReport, applied: CgroupApplied, net: NetworkFacts = NO_NETWORK, disk?: DiskApplied | 'none'): IsolationReport {
  const enforced: string[] = [];
  const notEnforced: string[] = [];
  const network = networkDescription(backend, net);
  const limit = (ok: string | undefined | false, text: string, how: string) => (ok ? enforced.push(`${text} (${how})`) : notEnforced.push(`${text}: no mechanism on this host`));
  if (backend === 'bwrap') {
    const id = machine.identity;
    enforced.push(
      'error' in id
        ? 'own user, pid, mount, network, ipc, uts and cgroup namespaces; all capabilities dropped; uid/gid 65534 inside'
        : `own user, pid, mount, network, ipc, uts and cgroup namespaces; all capabilities dropped; uid/gid 65534 inside, which is host uid ${id.uid} gid ${id.gid} outside (${id.mechanism === 'dedicated' ? `a user namespace paddock maps to a dedicated id, ${id.source === 'default' ? 'the default' : `from ${id.source}`}` : 'bwrap maps it to the user running paddock'}); no supplementary groups; setuid/setgid bits cleared from files the run leaves in its workspace, session folder and read-write mounts`,
      'filesystem: only the run workspace, its session folder and rw mounts are writable; read-only system paths (/usr, a few /etc files), the runner folder, its own bundle, node_modules, the harness CLIs and what the binding grants (readPaths, mounts); nothing else of the host is visible (paddock explain lists every bind)',
      `network: ${network}`,
      'the whole process tree dies with the run (pid namespace), setsid escapees included',
    );
    if ('error' in id) notEnforced.push(`a run identity: ${id.error} (bwrap runs are refused)`);
    else for (const warning of identityWarnings(id)) notEnforced.push(`an unprivileged host identity: ${warning}`);
  } else {
    const uid = process.getuid?.();
    notEnforced.push(`a separate identity: the runner runs as the host user (uid ${uid ?? '?'}${uid === 0 ? ', root: whatever it writes is root\'s, setuid bits included' : ''})`);
    enforced.push('own session and process group, killed (SIGTERM, then SIGKILL) at run end and confirmed through /proc');
    notEnforced.push(
      'filesystem isolation: the runner can read and write whatever the host user can (a read-only mount is only a symlink)',
      `network isolation: ${network}`,
      "containment of the process tree: the runner has the host user's rights, so a descendant can move itself out of the run's cgroup (e.g. into the root cgroup) as well as its group and session; at run end such a process is found and killed only while its environment still holds the run's PADDOCK_RUN_ID",
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
  return { backend, strength: backend === 'bwrap' ? 'strong' : 'weak', network, enforced, notEnforced };
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
  // Innermost, so only the runner (not the bridges' socat) holds the FIFO as its stdout.
  // bwrapOptions binds it (so `explain` lists it too); here it is made.
  const fifo = bwrap && request.stdoutFifo ? makeStdoutFifo(request.workspace) : undefined;
  const runnerArgv = fifo ? ['/bin/sh', '-c', `exec "$@" >${STDOUT_FIFO.target}`, 'paddock-stdout', request.launch.command, ...request.launch.args] : [request.launch.command, ...request.launch.args];
  const inner = bridges.length > 0 ? bridgeCommand(bridges, runnerArgv) : runnerArgv;
  if (bridged) {
    const proxy = `http://127.0.0.1:${EGRESS.port}`;
    request = { ...request, launch: { ...request.launch, env: { ...request.launch.env, HTTP_PROXY: proxy, HTTPS_PROXY: proxy, http_proxy: proxy, https_proxy: proxy } } };
  }
  // A root host maps the sandbox to its dedicated run uid through a namespace of its own; an
  // unprivileged host lets bwrap map it to itself (host/sandbox/runIdentity.ts).
  const identity = bwrap ? machine.identity : undefined;
  if (identity && 'error' in identity) {
    void cgroup?.release();
    throw new Error(`cannot map the sandbox to an unprivileged host identity: ${identity.error}`);
  }
  const userns = identity?.mechanism === 'dedicated' ? dedicatedUserns(identity) : undefined;
  if (fifo && identity) chownSync(fifo, identity.uid, identity.gid); // the runner opens it as its host uid
  // Host-side helpers by absolute path with the host's fixed environment; the runner's
  // environment reaches only the runner's own process (launcher.ts).
  const options = bwrap ? bwrapOptions(request, userns ? USERNS_FD : undefined) : undefined;
  let host: ReturnType<typeof hostLaunch>;
  try {
    host = hostLaunch({
      runner: request.launch,
      procsFiles: cgroup?.procsFiles ?? [],
      prlimit: machine.prlimit.available && machine.prlimit.path ? prlimitArgs(machine.prlimit.path, request.limits) : undefined,
      bwrap: options ? { path: machine.bwrap.path!, options, inner, prefix: userns ? usernsPrefix(userns) : [] } : undefined,
    });
  } catch (error) {
    // A launch that cannot be built (e.g. a NUL byte in a value) leaves nothing behind.
    if (fifo) rmSync(fifo, { force: true });
    void cgroup?.release();
    throw error;
  }
  // A run without quota filesystems is reported as such, whatever the machine could do.
  const report = isolationReport(request.backend, request.limits, machine, applied, { proxy: Boolean(bridged), allow: request.egress?.allow ?? [], allowPrivate: request.egress?.allowPrivate ?? false }, request.disk ?? 'none');
  const containment: Containment | undefined = cgroup
    ? {
        killAll: (ms) => cgroup.killAll(ms),
        killNow: () => cgroup.killNow(),
        release: () => {
          host.discard();
          return cgroup.release();
        },
        paths: cgroup.paths,
        notes: () => [
          ...(cgroup.oomKills() > 0 ? [`the memory limit (${request.limits.memoryBytes} bytes) killed ${cgroup.oomKills()} process(es)`] : []),
          ...(cgroup.pidsLimitHits() > 0 ? [`the pids limit refused ${cgroup.pidsLimitHits()} process(es)`] : []),
        ],
      }
    : undefined;
  return { launch: { ...host.launch, ...(fifo ? { stdoutFifo: fifo } : {}) }, report, containment, discard: host.discard, ...(options ? { binds: bindsOf(options) } : {}), ...(identity ? { identity } : {}) };
}

/** A FIFO beside the run's workspace (host side), for {@link SandboxRequest.stdoutFifo}. */
function makeStdoutFifo(workspace: string): string {
  const path = STDOUT_FIFO.source(workspace);
  rmSync(path, { force: true });
  // Node has no mkfifo; coreutils' is at a fixed path, run with a fixed environment.
  execFileSync('/usr/bin/mkfifo', ['-m', '0600', path], { env: {}, stdio: 'ignore' });
  return path;
}
