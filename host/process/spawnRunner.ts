import type { ChildProcess } from 'node:child_process';
import { closeSync, constants, openSync, rmSync } from 'node:fs';
import { Socket } from 'node:net';
import { HostError } from '../errors.js';
import { spawnThroughSpawner, type SpawnedChild, type SpawnFailure } from './runnerSpawner.js';

/** How to start a runner process; built from its manifest (host/plugins). */
export interface RunnerLaunch {
  command: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  /**
   * Read the runner's protocol output from this FIFO (the runner opens it itself) instead of the child's stdout pipe.
   */
  stdoutFifo?: string;
}

/** A started runner: the leader pid doubles as process-group and session id. */
export interface RunnerProcess {
  pid: number;
  /** Its exit: code, signal and the `exit` event (the runner spawner is its parent: docs/runner-spawner.md). */
  child: SpawnedChild;
  stdin: NonNullable<ChildProcess['stdin']>;
  stdout: NonNullable<ChildProcess['stdout']>;
  stderr: NonNullable<ChildProcess['stderr']>;
  /**
   * Call once the runner has written to stdout (e.g. answered initialize): with a FIFO stdout the
   * host holds a write end until then, so the reader sees no end-of-file before the runner has
   * opened it; after this, the FIFO ends exactly when the runner's side closes.
   */
  stdoutOpened(): void;
}

/** What holds a run besides the runner's group, for the runner spawner to kill if the host goes (decisions SP3). */
export interface RunHold {
  /** The run's cgroup directories (a sandbox's `containment.paths`). */
  cgroups?: string[];
}

/**
 * Start a runner in a new session and process group (`detached`, i.e. setsid), with exactly
 * `launch.env` as its environment, and without buffering its output: callers read and count the bytes
 * themselves. Started by the runner spawner (docs/runner-spawner.md), so the host's event loop never waits for a fork
 * of the host; the process, its stdio and its supervision are what a `child_process.spawn` here gave. No execa: every
 * execa feature would be switched off here, and its ~180 KB would be loaded by every CLI dispatch
 * (docs/benchmarks.md, "CLI start-up").
 * Rejects with `RUNNER_SPAWN_FAILED` when the command cannot be started.
 */
export async function spawnRunner(launch: RunnerLaunch, run: RunHold = {}): Promise<RunnerProcess> {
  // O_NONBLOCK: opening a FIFO blocks until the other end opens, and this is the main thread.
  const fifo = launch.stdoutFifo
    ? (() => {
        const read = openSync(launch.stdoutFifo, constants.O_RDONLY | constants.O_NONBLOCK);
        const hold = openSync(launch.stdoutFifo, constants.O_WRONLY | constants.O_NONBLOCK);
        return { read, hold: hold as number | undefined, path: launch.stdoutFifo };
      })()
    : undefined;
  const releaseHold = () => {
    if (fifo?.hold === undefined) return;
    closeSync(fifo.hold);
    fifo.hold = undefined;
    rmSync(fifo.path, { force: true }); // the runner holds it open by now; nothing else may
  };
  let started;
  try {
    started = await spawnThroughSpawner({
      command: launch.command,
      args: launch.args,
      cwd: launch.cwd,
      env: launch.env,
      stdout: fifo ? 'ignore' : 'pipe',
      cgroups: run.cgroups ?? [],
    });
  } catch (error) {
    releaseHold();
    if (fifo) closeSync(fifo.read);
    const code = (error as SpawnFailure).code;
    throw new HostError(
      'RUNNER_SPAWN_FAILED',
      `cannot start runner ${launch.command}: ${code ?? (error as Error).message}`,
      { command: launch.command, code },
    );
  }
  const { child } = started;
  // The supervisor follows the child's own 'exit' event, not the closing of its stdio.
  if (child.exitCode !== null || child.signalCode !== null) releaseHold();
  else child.once('exit', releaseHold);
  const stdout = fifo
    ? (new Socket({ fd: fifo.read, readable: true, writable: false }) as unknown as NonNullable<ChildProcess['stdout']>)
    : started.stdout;
  if (!stdout) {
    throw new HostError('RUNNER_SPAWN_FAILED', `runner ${launch.command} started without a pid or stdio`);
  }
  return { pid: started.pid, child, stdin: started.stdin, stdout, stderr: started.stderr, stdoutOpened: releaseHold };
}
