import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { RUNNER_SPAWNER_PROGRAM } from './runnerSpawnerProgram.js';

/** What the spawner answers (docs/runner-spawner.md, "What crosses the boundary"). */
interface Answer {
  id: number;
  stream?: 'stdin' | 'stdout' | 'stderr';
  pid?: number;
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

  spawn(request: SpawnRequest): Promise<SpawnedRunner> {
    let child: ChildProcess;
    try {
      child = this.child ?? this.start();
    } catch (error) {
      return Promise.reject(new SpawnFailure(`the runner spawner did not start: ${(error as Error).message}`));
    }
    const id = this.next++;
    return new Promise((resolve, reject) => {
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
    child.on('message', (answer: Answer, handle?: Socket) => this.take(answer, handle));
    child.once('exit', () => this.lost(child));
    child.once('error', () => this.lost(child));
    child.once('disconnect', () => this.lost(child));
    this.child = child;
    return child;
  }

  private take(a: Answer, handle?: Socket): void {
    const p = this.pending.get(a.id);
    if (a.stream && p && handle) {
      p.streams[a.stream] = handle;
    } else if (a.error && p) {
      this.pending.delete(a.id);
      p.reject(new SpawnFailure(a.error.message, a.error.code));
    } else if (a.pid !== undefined && p) {
      this.pending.delete(a.id);
      const { stdin, stdout, stderr } = p.streams;
      if (!stdin || !stderr) {
        p.reject(new SpawnFailure('the runner spawner sent no stdio'));
      } else {
        const runner: SpawnedRunner = { pid: a.pid, child: new SpawnedChild(), stdin, stdout, stderr };
        this.live.set(a.id, runner);
        p.resolve(runner);
      }
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
    if (this.pending.size === 0 && this.live.size === 0) this.child?.channel?.unref();
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
   * The spawner is gone (killed from outside): exits of its runners can no longer be seen, so each runner's group is
   * killed and reported as killed by SIGKILL (fail closed: no run goes on unsupervised); spawns in flight fail.
   */
  private lost(child: ChildProcess): void {
    if (this.child !== child) return;
    this.child = undefined;
    for (const id of [...this.pending.keys()])
      this.failPending(id, 'the runner spawner exited before the runner started');
    for (const [id, runner] of this.live) {
      this.live.delete(id);
      try {
        process.kill(-runner.pid, 'SIGKILL');
      } catch {
        // already gone
      }
      runner.child.exited(null, 'SIGKILL');
    }
  }
}

let spawner: RunnerSpawner | undefined;

/** Start one runner through the runner spawner, without forking the host (docs/runner-spawner.md). */
export function spawnThroughSpawner(request: SpawnRequest): Promise<SpawnedRunner> {
  return (spawner ??= new RunnerSpawner()).spawn(request);
}
