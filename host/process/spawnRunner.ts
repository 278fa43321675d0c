import type { ChildProcess } from 'node:child_process';
import { execa } from 'execa';
import { HostError } from '../errors.js';

/** How to start a runner process; built from its manifest (host/plugins). */
export interface RunnerLaunch {
  command: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
}

/** A started runner: the leader pid doubles as process-group and session id. */
export interface RunnerProcess {
  pid: number;
  child: ChildProcess;
  stdin: NonNullable<ChildProcess['stdin']>;
  stdout: NonNullable<ChildProcess['stdout']>;
  stderr: NonNullable<ChildProcess['stderr']>;
}

/**
 * Start a runner in a new session and process group (`detached`, i.e. setsid), with exactly
 * `launch.env` as its environment, and without buffering its output: execa's buffering can
 * abort the host on a large output, so callers count bytes themselves.
 * Rejects with `RUNNER_SPAWN_FAILED` when the command cannot be started.
 */
export async function spawnRunner(launch: RunnerLaunch): Promise<RunnerProcess> {
  const subprocess = execa(launch.command, launch.args, {
    cwd: launch.cwd,
    env: launch.env,
    extendEnv: false,
    detached: true,
    cleanup: false,
    buffer: false,
    reject: false,
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  // execa's promise settles only once every stdio stream closes, which a grandchild can delay
  // forever; the supervisor follows the child's own 'exit' event instead.
  subprocess.catch(() => undefined);
  const child = subprocess as unknown as ChildProcess;
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        new HostError('RUNNER_SPAWN_FAILED', `cannot start runner ${launch.command}: ${error.code ?? error.message}`, {
          command: launch.command,
          code: error.code,
        }),
      ),
    );
  });
  if (!child.pid || !child.stdin || !child.stdout || !child.stderr) {
    throw new HostError('RUNNER_SPAWN_FAILED', `runner ${launch.command} started without a pid or stdio`);
  }
  return { pid: child.pid, child, stdin: child.stdin, stdout: child.stdout, stderr: child.stderr };
}
