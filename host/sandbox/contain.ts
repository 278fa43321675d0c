import type { IsolationReport } from '../process/isolationReport.js';
import type { RunnerLaunch } from '../process/spawnRunner.js';
import type { PreparedSandbox, SandboxBackend, SandboxLimits, SandboxRequest } from './backend.js';
import type { SandboxBind } from './bwrapArgs.js';
import { RunCgroup, type CgroupApplied } from './cgroups.js';
import type { Containment } from './containment.js';
import { hostLaunch } from './launcher.js';
import type { MachineReport } from './probe.js';
import { diskQuotaLines, type DiskApplied } from './runDiskQuota.js';
import type { RunIdentity } from './runIdentity.js';

/** What a backend puts around the runner's own launch (built once the run's cgroup exists). */
export interface Wrapping {
  /** The runner's launch as the backend hands it over (e.g. with proxy variables). */
  runner: RunnerLaunch;
  /** The bwrap part of the host launch chain; absent: the runner runs directly under the env loader. */
  bwrap?: { path: string; options: string[]; inner: string[]; prefix: string[] };
  /** Whether the egress proxy is bridged in (for the report). */
  proxy: boolean;
  stdoutFifo?: string;
  binds?: SandboxBind[];
  identity?: RunIdentity;
  /** Undo what `wrap` made (e.g. the FIFO) when the launch cannot be built. */
  undo(): void;
}

/**
 * `prlimit` (by the absolute path the probe found) with the per-process limits (RLIMIT_CPU, RLIMIT_FSIZE,
 * RLIMIT_NOFILE).
 */
function prlimitArgs(path: string, limits: SandboxLimits): string[] {
  return [path, `--cpu=${limits.cpuSeconds}`, `--fsize=${limits.fileSizeBytes}`, `--nofile=${limits.openFiles}`, '--'];
}

/**
 * What every backend's `prepare` shares: the run's cgroup (memory, pids, kill-all), prlimit, the
 * host launch chain around the backend's `wrap`, the report and the containment. Leaves nothing
 * behind when `wrap` or the launch throws.
 */
export function containedLaunch(
  backend: SandboxBackend,
  request: SandboxRequest,
  machine: MachineReport,
  wrap: () => Wrapping,
): PreparedSandbox {
  const cgroup = RunCgroup.create(request.runId, {
    memoryBytes: request.limits.memoryBytes,
    pids: request.limits.pids,
  });
  const applied = cgroup?.applied ?? {};
  let wrapping: Wrapping;
  try {
    wrapping = wrap();
  } catch (error) {
    void cgroup?.release();
    throw error;
  }
  // Host-side helpers by absolute path with the host's fixed environment; the runner's
  // environment reaches only the runner's own process (launcher.ts).
  let host: ReturnType<typeof hostLaunch>;
  try {
    host = hostLaunch({
      runner: wrapping.runner,
      procsFiles: cgroup?.procsFiles ?? [],
      prlimit:
        machine.prlimit.available && machine.prlimit.path
          ? prlimitArgs(machine.prlimit.path, request.limits)
          : undefined,
      bwrap: wrapping.bwrap,
    });
  } catch (error) {
    // A launch that cannot be built (e.g. a NUL byte in a value) leaves nothing behind.
    wrapping.undo();
    void cgroup?.release();
    throw error;
  }
  // A run without quota filesystems is reported as such, whatever the machine could do.
  const reportFor = (disk: DiskApplied | 'none') =>
    backend.report(
      request.limits,
      machine,
      applied,
      {
        proxy: wrapping.proxy,
        allow: request.egress?.allow ?? [],
        allowPrivate: request.egress?.allowPrivate ?? false,
        beyondList: request.egress?.beyondList ?? false,
      },
      disk,
    );
  const report = reportFor(request.disk ?? 'none');
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
          ...(cgroup.oomKills() > 0
            ? [`the memory limit (${request.limits.memoryBytes} bytes) killed ${cgroup.oomKills()} process(es)`]
            : []),
          ...(cgroup.pidsLimitHits() > 0 ? [`the pids limit refused ${cgroup.pidsLimitHits()} process(es)`] : []),
        ],
        limitHits: () => [
          ...(cgroup.oomKills() > 0 ? (['memoryBytes'] as const) : []),
          ...(cgroup.pidsLimitHits() > 0 ? (['pids'] as const) : []),
        ],
      }
    : undefined;
  return {
    launch: { ...host.launch, ...(wrapping.stdoutFifo ? { stdoutFifo: wrapping.stdoutFifo } : {}) },
    report,
    reportFor,
    containment,
    discard: host.discard,
    ...(wrapping.binds ? { binds: wrapping.binds } : {}),
    ...(wrapping.identity ? { identity: wrapping.identity } : {}),
  };
}

/** A backend's own report lines, placed around the lines every backend shares. */
export interface BackendLines {
  /** First lines: the backend's namespaces, filesystem, network, identity. */
  enforced: string[];
  notEnforced: string[];
  /** Disk lines only this backend has: its private /tmp, and where it can write beyond the quota. */
  privateTmp: string[];
  unbounded: string[];
  /** Whether the report says if setsid escapees are killed at run end (a backend without a pid namespace). */
  reportsKillAll: boolean;
}

/**
 * An isolation report: the backend's own lines first, then what every backend shares (environment
 * allowlist, timeouts, request checks, cgroup and prlimit limits, disk quota).
 */
export function assembleReport(
  backend: Pick<SandboxBackend, 'name' | 'strength'>,
  own: BackendLines,
  l: SandboxLimits,
  machine: MachineReport,
  applied: CgroupApplied,
  network: string,
  disk?: DiskApplied | 'none',
): IsolationReport {
  const enforced = [...own.enforced];
  const notEnforced = [...own.notEnforced];
  const limit = (ok: string | undefined | false, text: string, how: string) =>
    ok ? enforced.push(`${text} (${how})`) : notEnforced.push(`${text}: no mechanism on this host`);
  enforced.push(
    'environment built from an allowlist: no host secrets or tokens',
    'handshake, wall-clock, idle and cancel-grace timeouts; stdout, stderr, line, update-count and event-byte quotas',
    "runner requests checked against the run's grants (run id, method, model, knowledge base, MCP server and " +
      'tool) and its rate, count and size limits',
  );
  limit(applied.memory, `memory ≤ ${l.memoryBytes} bytes for the whole run`, applied.memory ?? '');
  limit(applied.pids, `at most ${l.pids} processes`, applied.pids ?? '');
  limit(
    machine.prlimit.available && 'prlimit',
    `CPU time ≤ ${l.cpuSeconds} s per process, files ≤ ${l.fileSizeBytes} bytes, ≤ ${l.openFiles} open files`,
    'RLIMIT_CPU/FSIZE/NOFILE via prlimit',
  );
  const diskLines = diskQuotaLines(
    l,
    machine.diskQuota,
    { privateTmp: own.privateTmp, unbounded: own.unbounded },
    disk,
  );
  enforced.push(...diskLines.enforced);
  notEnforced.push(...diskLines.notEnforced);
  if (own.reportsKillAll)
    limit(applied.killAll, 'descendants that call setsid are killed at run end', applied.killAll ?? '');
  return { backend: backend.name, strength: backend.strength, network, enforced, notEnforced };
}
