import { spawn } from 'node:child_process';
import { PassThrough, type Readable, type Writable } from 'node:stream';
import { pino } from 'pino';
import type { z } from 'zod';
import type { RunnerDefinition } from '../runner/defineRunner.js';
import { serve } from '../runner/serve.js';

/** A runner to talk to: its stdin and stdout, how to learn it ended, and how to kill it. */
export interface RunnerTransport {
  /** The runner's input (its stdin). */
  input: Writable;
  /** The runner's output (its stdout): protocol lines only. */
  output: Readable;
  /** Resolves when the runner has ended (process exit, or `serve()` returned). */
  exited: Promise<void>;
  /** Stop it by force (SIGKILL to its process group). */
  kill(): void;
}

/** Starts a fresh runner for each check of the conformance suite. */
export type RunnerFactory = () => RunnerTransport | Promise<RunnerTransport>;

/**
 * Start a runner as a real child process in its own process group (stderr passes through to
 * this process's stderr unless `stderr: 'ignore'`).
 */
export function spawnRunnerProcess(
  command: string,
  args: string[] = [],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; stderr?: 'inherit' | 'ignore' } = {},
): RunnerTransport {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env ?? { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    stdio: ['pipe', 'pipe', options.stderr ?? 'inherit'],
    detached: true,
  });
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.once('error', () => resolve());
  });
  child.stdin.on('error', () => undefined);
  return {
    input: child.stdin,
    output: child.stdout,
    exited,
    kill: () => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    },
  };
}

/** Serve a runner definition in this process over in-memory streams (no child process). */
export function inProcessRunner<S extends z.ZodType>(runner: RunnerDefinition<S>, options: { logLevel?: string } = {}): RunnerTransport {
  const input = new PassThrough();
  const output = new PassThrough();
  const exited = serve(runner, {
    input,
    output,
    exitProcess: false,
    logger: pino({ level: options.logLevel ?? 'silent' }),
  });
  return { input, output, exited, kill: () => input.end() };
}
