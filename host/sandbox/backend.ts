import type { HostLimits } from '../config/limits.js';
import type { IsolationReport } from '../process/isolationReport.js';
import type { RunnerLaunch } from '../process/spawnRunner.js';
import type { SandboxBind } from './bwrapArgs.js';
import type { CgroupApplied } from './cgroups.js';
import type { Containment } from './containment.js';
import type { MachineReport } from './probe.js';
import type { DiskApplied } from './runDiskQuota.js';
import type { RunIdentity } from './runIdentity.js';
import { bwrapBackend } from './backends/bwrap.js';
import { processBackend } from './backends/process.js';

/** The sandbox backends, in the order `doctor` lists them. */
export const BACKENDS = ['process', 'bwrap'] as const;
/** A sandbox backend name (a binding's `sandbox`). */
export type Backend = (typeof BACKENDS)[number];

/** Resource limits a sandbox applies to the whole run. */
export type SandboxLimits = Pick<
  HostLimits,
  'memoryBytes' | 'pids' | 'cpuSeconds' | 'fileSizeBytes' | 'openFiles' | 'diskBytes' | 'inodes'
>;

/** What one run's sandbox must allow. Paths are host paths; nothing else is visible under a strong backend. */
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
  /**
   * Host end of the run's egress proxy, bound into the sandbox (when {@link SandboxBackend.startsEgressProxy}); absent:
   * no network.
   */
  egressSocket?: string;
  /** Host end of the run's gateway socket, bound into the sandbox (when {@link SandboxBackend.gatewayOnSocket}). */
  gatewaySocket?: string;
  /** The binding's egress allowlist (for the report; enforced only when `egressSocket` is set). */
  egress?: { allow: string[]; allowPrivate: boolean; beyondList?: boolean };
  /**
   * Give the runner its stdout through a FIFO opened by its own exec, not the pipe the sandbox's
   * processes inherit, so a runner that closes stdout is seen at once (bwrap's monitor and pid 1
   * would hold an inherited pipe open until the wall clock). Set from {@link SandboxBackend.stdoutFifo}.
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
  /**
   * Every bind and link of the launch, read from its options (for the audit and `explain`); absent: the backend binds
   * nothing.
   */
  binds?: SandboxBind[];
  report: IsolationReport;
  /**
   * The same report with other disk figures (a warm slot learns its run's session quota only when the run takes it,
   * docs/warm-pool.md); absent where the backend has no cgroup-based report to recompute.
   */
  reportFor?(disk: DiskApplied | 'none'): IsolationReport;
  containment?: Containment;
  /** The host uid/gid the sandbox's own identity is: what the run's files are owned by (absent: the host user). */
  identity?: RunIdentity;
}

/** What a run's network mechanism is: whether its egress proxy runs, and the proxy's allowlist. */
export interface NetworkFacts {
  /** The host egress proxy is started and bridged into the sandbox. */
  proxy: boolean;
  /** The binding's `network.egress` allowlist (enforced only when `proxy`). */
  allow: string[];
  allowPrivate: boolean;
  /** The run's policy may allow destinations off the list (a rule, or a person's approval). */
  beyondList?: boolean;
}

/**
 * One sandbox backend: every decision that differs between backends is a member here, so no code
 * outside `host/sandbox/backends/` branches on a backend's name (a source scan test holds this).
 * Reports are computed from the mechanism (the machine report, what was applied), never from
 * configuration; a backend that cannot give what it reports must refuse instead (fail closed).
 */
export interface SandboxBackend {
  /** The name a binding asks for; also the `backend` of every report and audit record. */
  readonly name: Backend;

  /** `strong`: the runner sees only what the launch binds; `weak`: it has the host user's view and rights. */
  readonly strength: IsolationReport['strength'];

  /**
   * Whether this machine can run the backend. When not, `why` names what is missing (it becomes
   * the `sandbox_unavailable` refusal, `explain`'s reason and the degrade note). Must be computed
   * from the machine report only, so `explain`, dispatch and the run agree.
   */
  available(machine: MachineReport): { ok: true } | { ok: false; why: string };

  /**
   * Where a binding that allows degrading goes when this backend is unavailable, and what it loses
   * there (shown as `DEGRADED:` and audited). Absent: never unavailable, or no weaker backend.
   */
  readonly degradesTo?: { backend: Backend; loses: string };

  /**
   * The dedicated host identity a run's files must be given to (and checked against) before it
   * starts and whose setuid/setgid leftovers are cleared after it ends; undefined when the run is
   * the host user (nothing to hand over).
   */
  runIdentity(machine: MachineReport): RunIdentity | undefined;

  /** How a run is seen on the host: what owns every file it writes (`explain`'s worst case). */
  hostIdentity(machine: MachineReport): string;

  /**
   * True: the sandbox binds granted mounts (mount mode) and skill copies itself and enforces their
   * read-only flag, so the host leaves mount points and binds. False: the host links mounts and can
   * only drop write permission from skills (read-only NOT enforced, said in the report).
   */
  readonly bindsGrants: boolean;

  /**
   * True: the run has no host network, so the gateway must listen on a socket bound into the
   * sandbox and refuse the run's token on its loopback listener. False: the loopback listener.
   */
  readonly gatewayOnSocket: boolean;

  /**
   * True: a runner's process may be started before its run is known (a warm slot, docs/warm-pool.md): nothing of
   * the run (workspace, session folder, sockets) is fixed into the sandbox when it starts. False: it is (bwrap binds).
   */
  readonly warmSlots: boolean;
  /** True: a run's stdout reaches the host through a FIFO (see {@link SandboxRequest.stdoutFifo}). */
  readonly stdoutFifo: boolean;

  /**
   * Whether a run whose binding wants egress (host/policy/egressReach.ts) gets the host egress proxy (only where the
   * proxy is its only way out).
   */
  startsEgressProxy(wantsEgress: boolean): boolean;

  /**
   * The one description of a run's network, from the mechanism: explain, the run headers, `--json`
   * and the audit's `run.spawned` all show this string.
   */
  describeNetwork(facts: NetworkFacts): string;

  /**
   * What the backend enforces with these limits on this machine, and what it does not (every run
   * view, `explain`, `doctor`). `applied`: the cgroup controllers that took; `disk`: the run's
   * quota filesystems, `'none'` for a run without, absent for a binding not running yet.
   */
  report(
    limits: SandboxLimits,
    machine: MachineReport,
    applied: CgroupApplied,
    network?: NetworkFacts,
    disk?: DiskApplied | 'none',
  ): IsolationReport;

  /**
   * Every bind and link a launch of `request` would get (for `explain`, without starting it); undefined when the
   * backend binds nothing.
   */
  launchBinds(request: SandboxRequest): SandboxBind[] | undefined;

  /**
   * Wrap a runner launch in the sandbox: cgroup (whole-run limits), per-process limits, the host
   * launch chain. Must fail closed (throw) when it cannot give what its report says, and must
   * leave nothing behind (cgroup, FIFO, launch file) when it throws.
   */
  prepare(request: SandboxRequest, machine: MachineReport): PreparedSandbox;
}

const BY_NAME: Record<Backend, SandboxBackend> = { process: processBackend, bwrap: bwrapBackend };

/** The implementation of a backend name. */
export function sandboxBackend(name: Backend): SandboxBackend {
  // Own names only: a name like `__proto__` or `toString` is no backend.
  const backend = Object.hasOwn(BY_NAME, name) ? BY_NAME[name] : undefined;
  if (!backend) throw new Error(`unknown sandbox backend ${JSON.stringify(name)}`);
  return backend;
}
