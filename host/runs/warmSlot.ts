import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { InitializeResult } from '../../sdk/protocol/types.js';
import { RpcError } from '../../sdk/protocol/rpcError.js';
import { SUPPORTED_PROTOCOL_VERSIONS } from '../../sdk/protocol/version.js';
import { attachPeer, lineWriter } from '../../sdk/transport/attach.js';
import { HostEndpoint } from '../../sdk/transport/hostEndpoint.js';
import { HOST_INFO, type HostConfig } from '../config/hostConfig.js';
import { HARNESS_DIR } from '../harness/harnesses.js';
import type { RunnerCommand } from '../plugins/resolveRunner.js';
import { egressBeyondList } from '../policy/egressReach.js';
import { buildRunnerEnv } from '../process/envAllowlist.js';
import { registerGroup, unregisterGroup } from '../process/liveGroups.js';
import { spawnRunner, type RunnerProcess } from '../process/spawnRunner.js';
import { unsupportedHostRequests } from '../rpc/hostRequestHandler.js';
import { sandboxBackend, type PreparedSandbox } from '../sandbox/backend.js';
import type { MachineReport } from '../sandbox/probe.js';
import { newSlotId } from './warmSlotId.js';
import { killRunLeftovers } from './killRunLeftovers.js';
import { mountSlotDiskQuota, type SlotDiskQuota } from '../sandbox/runDiskQuota.js';
import { runSandboxRequest } from '../sandbox/runSandbox.js';
import type { RunPlan } from './plan.js';
import { grantedReadPaths } from './provision.js';
import { createRunWorkspace, removeRunWorkspace, type RunWorkspace } from './workspace.js';
import type { RunAccess } from '../authz/runAccess.js';
import { takeSnapshot, type Snapshot, type SnapshotRoot } from '../changes/snapshot.js';

/** A started runner process that answered `initialize` and waits for `run`: what superviseRun takes over. */
export interface WarmProcess {
  proc: RunnerProcess;
  init: InitializeResult;
  /** The id the process was started under: its PADDOCK_RUN_ID, workspace and cgroup name (docs/warm-pool.md). */
  slotId: string;
  /** What the process wrote to stderr while it waited (the run's stderr tail starts with it). */
  stderr: Buffer[];
  /**
   * Call once the run no longer waits for its start (its first update is out, or it ended): the pool refills then,
   * so the replacement's start does not delay this run's first update (set by the pool; docs/warm-pool.md).
   */
  started?(): void;
}

/** One pooled runner process with everything made for it, until a run takes it or it is stopped. */
export interface WarmSlot {
  readonly id: string;
  /** The slot's process id (its process group and session). */
  readonly pid: number;
  readonly workspace: RunWorkspace;
  readonly disk?: SlotDiskQuota;
  readonly sandbox: PreparedSandbox;
  /**
   * The workspace's change snapshot, taken before the process started, as a cold run's is (host/changes/): there
   * when the pool's runs are granted nothing that is copied or linked into the workspace at the take.
   */
  readonly changesStart?: Snapshot;
  /** Still waiting: not taken, not stopped, its process alive and silent. */
  idle(): boolean;
  /** Hand the process over to a run (its output is no longer watched here); undefined if it is not idle. */
  take(): WarmProcess | undefined;
  /** Kill the slot's process group and empty and remove its cgroup (what a taken slot's run must undo). */
  kill(): Promise<void>;
  /** Stop an untaken slot: {@link kill}, then its quota and workspace gone. */
  stop(): Promise<void>;
}

/** What starting a slot needs: host-wide services and the plan of the run that asked for the pool. */
export interface SlotInput {
  config: HostConfig;
  log: Logger;
  machine: MachineReport;
  plan: RunPlan;
  command: RunnerCommand;
  /** Called once when the slot stops being idle for any reason but a take (died, spoke, stopped). */
  onGone(slot: WarmSlot): void;
}

/** Most stderr bytes an idle slot keeps for its run's tail. */
const IDLE_STDERR_BYTES = 16 * 1024;

/**
 * Start one slot exactly as a cold run's runner starts (same sandbox request and `prepare`, same environment
 * allowlist), under a fresh run-shaped id, and `initialize` it. Rejects, leaving nothing behind, when it cannot.
 */
export async function startSlot(input: SlotInput): Promise<WarmSlot> {
  const { config, machine, plan, command } = input;
  const { binding, runner, access } = plan;
  const id = newSlotId();
  const undo: (() => void | Promise<void>)[] = [];
  const cleanup = async () => {
    for (const step of undo.reverse()) {
      try {
        await step();
      } catch (error) {
        input.log.error({ slot: id, err: error }, 'could not undo part of a warm slot');
      }
    }
  };
  try {
    const root = join(config.dataDir, 'workspaces', id);
    // Undone in reverse: the quota filesystem is unmounted before its mount point is removed.
    undo.push(() => removeRunWorkspace({ root }));
    const disk = machine.diskQuota.available
      ? await mountSlotDiskQuota(machine.diskQuota, config.dataDir, id, root, access.limits)
      : undefined;
    if (disk) undo.push(() => disk.release());
    const ws = createRunWorkspace(config.dataDir, id);
    const changesStart = grantsNothingIntoWorkspace(access) ? await takeSnapshot(workspaceRoots(ws)) : undefined;
    const env = buildRunnerEnv({
      hostEnv: process.env,
      home: ws.home,
      tmpDir: ws.tmp,
      runId: id,
      extra: runner.manifest.env,
    });
    const harnessDir = config.harnessDir ?? HARNESS_DIR;
    if (existsSync(harnessDir)) env.PADDOCK_HARNESS_DIR = harnessDir;
    const sandbox = sandboxBackend(binding.sandbox).prepare(
      runSandboxRequest({
        backend: binding.sandbox,
        runId: id,
        launch: { command: command.command, args: command.args, cwd: ws.root, env },
        workspace: ws.root,
        runnerDir: runner.dir,
        bundle: command.bundle,
        harnessDir,
        readPaths: grantedReadPaths(binding.readPaths, config.mountRoots ?? []),
        binds: [],
        limits: access.limits,
        egress: {
          allow: binding.network.egress,
          allowPrivate: binding.network.allowPrivate,
          beyondList: egressBeyondList(binding),
        },
      }),
      machine,
    );
    const proc = await spawnRunner(sandbox.launch, { cgroups: sandbox.containment?.paths }).catch(
      async (error: unknown) => {
        // A start can fail after the fork (the runner spawner died before the host had the pid): what did start is
        // killed, as at a run's end (docs/runner-spawner.md), and the slot's cgroup goes with it.
        const killConfirmMs = access.limits.killConfirmMs;
        const left = await killRunLeftovers({
          containment: sandbox.containment,
          envRunId: id,
          killConfirmMs,
          startedAfter: 0,
        });
        if (left.survivors.length > 0)
          input.log.error({ slot: id, left: left.survivors }, 'a failed warm start left processes');
        sandbox.discard(); // the launch file, if the launch shell never ran
        throw error;
      },
    );
    return await watchSlot(input, { id, ws, disk, sandbox, proc, changesStart, cleanup });
  } catch (error) {
    await cleanup();
    throw error;
  }
}

/** Register, initialize and watch a started slot process; the rest of the slot's life. */
async function watchSlot(
  input: SlotInput,
  made: {
    id: string;
    ws: RunWorkspace;
    disk?: SlotDiskQuota;
    sandbox: PreparedSandbox;
    proc: RunnerProcess;
    changesStart?: Snapshot;
    cleanup(): Promise<void>;
  },
): Promise<WarmSlot> {
  const { id, ws, disk, sandbox, proc, changesStart } = made;
  const limits = input.plan.access.limits;
  const containment = sandbox.containment;
  registerGroup(proc.pid, containment ? () => containment.killNow() : undefined);
  let state: 'starting' | 'idle' | 'taken' | 'gone' = 'starting';
  let exited = false;
  const exit = new Promise<void>((resolve) => proc.child.once('exit', () => resolve()));
  const stderr: Buffer[] = [];
  let stderrBytes = 0;
  const onStderr = (chunk: Buffer) => {
    if (stderrBytes + chunk.length <= IDLE_STDERR_BYTES) stderr.push(chunk);
    stderrBytes += chunk.length;
  };
  proc.stderr.on('data', onStderr);
  let killed: Promise<void> | undefined;
  const kill = () =>
    (killed ??= (async () => {
      if (state !== 'taken') {
        state = 'gone';
        detach();
        conn.close(RpcError.runnerExited('the warm slot was stopped'));
      }
      try {
        process.kill(-proc.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
      if (containment) {
        const left = await containment.killAll(limits.killConfirmMs);
        if (left.length === 0) await containment.release();
        else input.log.error({ slot: id, left }, 'warm slot processes survived their cgroup kill');
      }
      if (!exited) await Promise.race([exit, new Promise((r) => setTimeout(r, limits.killConfirmMs).unref())]);
      unregisterGroup(proc.pid);
      proc.stdin.destroy();
      proc.stdout.destroy();
      proc.stderr.destroy();
    })());
  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      await kill();
      await made.cleanup();
    })());
  // Anything that ends the wait but a take: the slot is out of the pool and stopped.
  const gone = (why: string) => {
    if (state === 'taken' || state === 'gone') return;
    const wasIdle = state === 'idle';
    input.log.debug({ slot: id, why }, 'warm slot retired');
    void stop();
    if (wasIdle) input.onGone(slot);
  };
  const onExit = () => {
    exited = true;
    gone('its process exited');
  };
  proc.child.once('exit', onExit);
  const conn = new HostEndpoint({
    send: lineWriter(proc.stdin),
    host: HOST_INFO,
    hostRequests: unsupportedHostRequests,
    onViolation: (v) => gone(`it sent an invalid message: ${v.reason}`),
    onUpdate: () => gone('it sent an update before run'),
    onHostRequest: () => gone('it sent a request before run'),
  });
  const detach = attachPeer(conn.peer, proc.stdout, () => gone('its stdout broke the protocol'), {
    maxLineBytes: limits.maxLineBytes,
    onLine: (bytes) => conn.noteLineBytes(bytes),
    onEnd: () => gone('it closed its stdout'),
  });
  const slot: WarmSlot = {
    id,
    pid: proc.pid,
    workspace: ws,
    disk,
    sandbox,
    changesStart,
    idle: () => state === 'idle' && !exited && proc.child.exitCode === null && alive(proc.pid),
    take: () => {
      if (!slot.idle()) return undefined;
      state = 'taken';
      // From here the run's supervisor reads the process; nothing may be read (and lost) in between.
      detach();
      proc.stdout.pause();
      proc.stderr.off('data', onStderr);
      proc.stderr.pause();
      proc.child.off('exit', onExit);
      return { proc, init: init!, slotId: id, stderr };
    },
    kill,
    stop,
  };
  let init: InitializeResult | undefined;
  try {
    init = await conn.initialize(limits.handshakeTimeoutMs);
    proc.stdoutOpened();
    if (!SUPPORTED_PROTOCOL_VERSIONS.includes(init.protocolVersion))
      throw new Error(`runner speaks protocol version ${init.protocolVersion}`);
  } catch (error) {
    state = 'gone';
    await stop();
    throw error;
  }
  if (state !== 'starting') {
    await stop();
    throw new Error('the warm slot stopped while it was initialized');
  }
  state = 'idle';
  return slot;
}

/**
 * Whether a process still runs: a SIGKILLed process is a zombie (or gone) at once, before Node reaps it and emits
 * `exit`, so a slot killed just now is not handed to a run.
 */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/** Whether a run with `access` finds its workspace as made: no artifact, skill or mount copied or linked into it. */
export function grantsNothingIntoWorkspace(access: Pick<RunAccess, 'artifacts' | 'skills' | 'mounts'>): boolean {
  return access.artifacts.length + access.skills.length + access.mounts.length === 0;
}

/** The change snapshot's roots of a workspace with nothing granted into it (provision.ts `changes`: the root alone). */
export function workspaceRoots(ws: Pick<RunWorkspace, 'root'>): SnapshotRoot[] {
  return [{ label: '', path: ws.root }];
}
