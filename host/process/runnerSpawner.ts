import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { parseProcStat } from '../../sdk/process/procTable.js';
import { killAbandonedRunner } from './abandonedRunner.js';
import { RUNNER_SPAWNER_PROGRAM } from './runnerSpawnerProgram.js';

/** What the spawner answers (docs/runner-spawner.md, "What crosses the boundary"). */
interface Answer {
  id: number;
  stream?: 'stdin' | 'stdout' | 'stderr';
  pid?: number;
  /** The runner's start time (clock ticks after boot), with its pid: a pid is killed late only while it matches. */
  start?: number | null;
  error?: { code?: string; message: string };
  exit?: { code: number | null; signal: NodeJS.Signals | null };
}

/** One runner start, as the spawner runs it: `spawn(command, args, {cwd, env, detached: true, stdio})`. */
export interface SpawnRequest {
  command: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  /** The runner's stdout: a socket pair (`pipe`) or nothing (`ignore`: it writes to a FIFO the host opened). */
  stdout: 'pipe' | 'ignore';
  /**
   * The run's cgroup directories (none without cgroups): what the spawner kills, with the runner's process group, if
   * the host goes while the run may be alive (decisions SP3).
   */
  cgroups: string[];
}

/**
 * How long the spawner may say nothing while it owes an answer before it counts as lost (decisions SP4). A healthy
 * spawner answers within milliseconds (a fork and an exec); a false alarm costs every run it holds (each ends
 * `crashed`), a stopped spawner holds every start this long.
 */
export const DEFAULT_SPAWN_ANSWER_MS = 10_000;

/** How this process's runner spawner is watched. */
export interface RunnerSpawnerOptions {
  /** Silence, while an answer is owed, past which the spawner is killed as lost (ms). */
  answerMs: number;
}

/** The part of a child process supervision reads: its exit (code or signal) and the `exit` event. */
export class SpawnedChild extends EventEmitter {
  exitCode: number | null = null;
  signalCode: NodeJS.Signals | null = null;

  /** Record the exit and tell the listeners, once. */
  exited(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.exitCode !== null || this.signalCode !== null) return;
    this.exitCode = code;
    this.signalCode = signal;
    this.emit('exit', code, signal);
  }
}

/** A started runner: its pid, its stdio sockets (stdout absent when `ignore`) and its exit. */
export interface SpawnedRunner {
  pid: number;
  child: SpawnedChild;
  stdin: Socket;
  stdout?: Socket;
  stderr: Socket;
}

/** Why a spawn failed: the errno code when there is one (`ENOENT`…), and the text. */
export class SpawnFailure extends Error {
  constructor(
    message: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

interface Pending {
  resolve(runner: SpawnedRunner): void;
  reject(error: SpawnFailure): void;
  streams: Partial<Record<'stdin' | 'stdout' | 'stderr', Socket>>;
}

/**
 * Why this exists: `spawn()` forks the caller, and `fork()` copies the caller's page tables, so every runner the host
 * started itself blocked its event loop for time that grows with the host's memory (docs/runner-spawner.md). This
 * small process, started once, forks instead; the host sends one message and receives the runner's stdio handles.
 */
class RunnerSpawner {
  private child: ChildProcess | undefined;
  private next = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly live = new Map<number, SpawnedRunner>();
  private options: RunnerSpawnerOptions = { answerMs: DEFAULT_SPAWN_ANSWER_MS };
  /** When the current spawner last said anything (or was last asked while it owed nothing). */
  private lastHeard = 0;
  private watchdog: NodeJS.Timeout | undefined;
  /** Until when (this process's monotonic clock) the host's lease surely lasts; null: no lease bounds the runs. */
  private leaseEnd: number | null = null;

  configure(options: Partial<RunnerSpawnerOptions>): void {
    const answerMs = options.answerMs ?? this.options.answerMs;
    if (!Number.isInteger(answerMs) || answerMs < 1 || answerMs > 2_147_483_647)
      throw new RangeError(`the runner spawner's answer bound must be a whole number of ms ≥ 1, not ${answerMs}`);
    this.options = { answerMs };
  }

  /** Bound every run the spawner holds to the host's lease: `validForMs` from now, or none (null). */
  holdToLease(validForMs: number | null): void {
    this.leaseEnd = validForMs === null ? null : performance.now() + validForMs;
    if (this.child) this.sendLease(this.child);
  }

  /** Tell the spawner how long from now the lease lasts (the spawner's clock is its own: a duration, not a time). */
  private sendLease(child: ChildProcess): void {
    if (!child.connected) return;
    const lease = this.leaseEnd === null ? null : Math.max(0, this.leaseEnd - performance.now());
    // A spawner that cannot take it is lost, and `lost` fails closed; nothing to do here.
    child.send({ lease }, () => {});
  }

  spawn(request: SpawnRequest): Promise<SpawnedRunner> {
    // A spawner found stopped (a process-backend runner can SIGSTOP or ptrace-stop its parent) would hold this start
    // until the bound: it is given up now, as the bound would do, and this start goes to a new one.
    if (this.child && isStopped(this.child.pid))
      this.giveUp(this.child, 'the runner spawner was found stopped and was killed');
    let child: ChildProcess;
    try {
      child = this.child ?? this.start();
    } catch (error) {
      return Promise.reject(new SpawnFailure(`the runner spawner did not start: ${(error as Error).message}`));
    }
    const id = this.next++;
    return new Promise((resolve, reject) => {
      // The silence that counts starts now if nothing else was owed: an idle spawner has nothing to say.
      if (this.pending.size === 0) {
        this.lastHeard = performance.now();
        this.watch(child, this.options.answerMs);
      }
      this.pending.set(id, { resolve, reject, streams: {} });
      this.hold();
      child.send({ id, ...request }, (error) => {
        if (error) this.failPending(id, `the runner spawner did not take the request: ${error.message}`);
      });
    });
  }

  private start(): ChildProcess {
    // Only what node needs to start; a runner's environment is its request's `env`, never this one.
    const child = spawn(process.execPath, ['-e', RUNNER_SPAWNER_PROGRAM], {
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C.UTF-8' },
      stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
    });
    // Never what keeps the host alive by itself: the channel is held only while a spawn or a runner is owed (hold).
    child.unref();
    child.channel?.unref();
    child.on('message', (answer: Answer, handle?: Socket) => this.take(child, answer, handle));
    child.once('exit', () => this.lost(child, 'the runner spawner exited before the runner started'));
    child.once('error', () => this.lost(child, 'the runner spawner exited before the runner started'));
    child.once('disconnect', () => this.lost(child, 'the runner spawner exited before the runner started'));
    this.child = child;
    // Before its first start: a new spawner holds its runs to the lease from the first.
    this.sendLease(child);
    return child;
  }

  private take(from: ChildProcess, a: Answer, handle?: Socket): void {
    if (from === this.child) this.lastHeard = performance.now();
    const p = from === this.child ? this.pending.get(a.id) : undefined;
    if (a.stream && p && handle) {
      p.streams[a.stream] = handle;
    } else if (a.error && p) {
      this.pending.delete(a.id);
      p.reject(new SpawnFailure(a.error.message, a.error.code));
    } else if (a.pid !== undefined && p) {
      this.pending.delete(a.id);
      const { stdin, stdout, stderr } = p.streams;
      if (!stdin || !stderr) {
        killAbandonedRunner(a.pid, a.start);
        p.reject(new SpawnFailure('the runner spawner sent no stdio'));
      } else {
        const runner: SpawnedRunner = { pid: a.pid, child: new SpawnedChild(), stdin, stdout, stderr };
        this.live.set(a.id, runner);
        p.resolve(runner);
      }
    } else if (a.pid !== undefined) {
      killAbandonedRunner(a.pid, a.start);
    } else if (a.exit) {
      const runner = this.live.get(a.id);
      this.live.delete(a.id);
      // Not in the turn the runner's start was resolved in (its pid and exit may arrive in one read): whoever awaited
      // the start attaches its `exit` listener first, as with a direct spawn, whose exit comes from a later SIGCHLD.
      const { code, signal } = a.exit;
      if (runner) setImmediate(() => runner.child.exited(code, signal));
    }
    // A handle that belongs to nobody (its spawn already failed) is closed, not leaked.
    if (handle && (!p || p.streams[a.stream!] !== handle)) handle.destroy();
    this.release();
  }

  /** Hold the channel (and so the host) while an answer or an exit is owed; let go when none is. */
  private hold(): void {
    this.child?.channel?.ref();
  }

  private release(): void {
    if (this.pending.size === 0) this.unwatch();
    if (this.pending.size === 0 && this.live.size === 0) this.child?.channel?.unref();
  }

  /**
   * Look again `ms` from now whether the spawner has been silent for the whole bound while it owed an answer. The
   * decision waits for the event loop's next poll phase, as the run timers' do (superviseRun's `afterWaitingInput`):
   * a host loop stalled past the bound runs this timer before it reads what the spawner sent meanwhile, and a spawner
   * that answered must not be killed for the host's stall.
   */
  private watch(child: ChildProcess, ms: number): void {
    this.unwatch();
    this.watchdog = setTimeout(() => {
      this.watchdog = undefined;
      setImmediate(() => {
        if (this.child !== child || this.pending.size === 0) return;
        const silent = performance.now() - this.lastHeard;
        if (silent < this.options.answerMs) this.watch(child, this.options.answerMs - silent);
        else this.giveUp(child, `the runner spawner did not answer within ${this.options.answerMs} ms and was killed`);
      });
    }, ms);
    this.watchdog.unref();
  }

  /** Nothing is owed any more: no bound runs. */
  private unwatch(): void {
    clearTimeout(this.watchdog);
    this.watchdog = undefined;
  }

  /**
   * The spawner owes an answer and has said nothing for the whole bound, or is found stopped (a process-backend runner
   * can SIGSTOP its parent): lost, fail closed (decisions SP4). Its runners' groups are killed first, while it still
   * holds them (a stopped or stuck parent reaps nothing, so their pids cannot have been reused), then the spawner;
   * spawns in flight fail `RUNNER_SPAWN_FAILED` with `why`; the next spawn starts a new spawner.
   */
  private giveUp(child: ChildProcess, why: string): void {
    this.lost(child, why);
    child.kill('SIGKILL');
  }

  private failPending(id: number, message: string): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    for (const s of Object.values(p.streams)) s.destroy();
    p.reject(new SpawnFailure(message));
    this.release();
  }

  /**
   * The spawner is gone (killed from outside) or given up: exits of its runners can no longer be seen, so each
   * runner's group is killed and reported as killed by SIGKILL (fail closed: no run goes on unsupervised); spawns in
   * flight fail with `why`.
   */
  private lost(child: ChildProcess, why: string): void {
    if (this.child !== child) return;
    this.child = undefined;
    this.unwatch();
    for (const id of [...this.pending.keys()]) this.failPending(id, why);
    for (const [id, runner] of this.live) {
      this.live.delete(id);
      try {
        process.kill(-runner.pid, 'SIGKILL');
      } catch {
        // already gone
      }
      runner.child.exited(null, 'SIGKILL');
    }
    child.channel?.unref();
  }
}

/** Whether `pid` is stopped, by a signal or a tracer (its /proc state `T` or `t`). */
function isStopped(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    const state = parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.state;
    return state === 'T' || state === 't';
  } catch {
    return false; // gone: its exit is on its way
  }
}

let spawner: RunnerSpawner | undefined;

/** Start one runner through the runner spawner, without forking the host (docs/runner-spawner.md). */
export function spawnThroughSpawner(request: SpawnRequest): Promise<SpawnedRunner> {
  return (spawner ??= new RunnerSpawner()).spawn(request);
}

/**
 * Bound the runs of this process's runner spawner to the host's lease (docs/runner-spawner.md, "The host pauses past
 * its lease"): unless this is called again within `validForMs`, the spawner kills every run it holds and starts no
 * runner until it is. Null: no lease bounds them (SQLite, or the lease given up). One spawner serves every host of a
 * process: the last call holds for all of them.
 */
export function holdRunnersToLease(validForMs: number | null): void {
  (spawner ??= new RunnerSpawner()).holdToLease(validForMs);
}

/**
 * Set how this process's runner spawner is watched. One spawner serves every host of a process: the last setting holds
 * for all of them.
 */
export function configureRunnerSpawner(options: Partial<RunnerSpawnerOptions>): void {
  (spawner ??= new RunnerSpawner()).configure(options);
}
