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
  /** The last few KiB the runner wrote to stderr (a process runner), for reports of a runner that failed. */
  stderrTail?(): string;
  /** How the runner process ended on its own, once it has; undefined while it runs or when {@link kill} ended it. */
  ended?(): RunnerEnd | undefined;
}

/** How a runner process ended on its own: its exit code or signal, or why it never started. */
export interface RunnerEnd {
  /** Its exit code, when it exited (null when a signal ended it or it never started). */
  code: number | null;
  /** The signal that ended it (`SIGSEGV`), or null. */
  signal: string | null;
  /** Why it could not be started at all (`spawn python3 ENOENT`); code and signal are then null. */
  startError?: string;
}

/** How much of a runner's stderr {@link spawnRunnerProcess} keeps for reports. */
export const STDERR_TAIL_BYTES = 8 * 1024;
/** Longest wait, after the runner exited, for the rest of its stderr. */
const STDERR_DRAIN_MS = 250;

/** Starts a fresh runner for each check of the conformance suite. */
export type RunnerFactory = () => RunnerTransport | Promise<RunnerTransport>;

/**
 * Start a runner as a real child process in its own process group. Its stderr passes through to
 * this process's stderr (unless `stderr: 'ignore'`), and its last {@link STDERR_TAIL_BYTES} are
 * kept either way, so a conformance report can show why a runner failed to start.
 */
export function spawnRunnerProcess(
  command: string,
  args: string[] = [],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; stderr?: 'inherit' | 'ignore' } = {},
): RunnerTransport {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env ?? { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  let tail = Buffer.alloc(0);
  child.stderr.on('data', (chunk: Buffer) => {
    if (options.stderr !== 'ignore') process.stderr.write(chunk);
    tail = Buffer.concat([tail, chunk]);
    if (tail.length > STDERR_TAIL_BYTES) tail = tail.subarray(tail.length - STDERR_TAIL_BYTES);
  });
  let end: RunnerEnd | undefined;
  let killed = false;
  const stderrEnded = new Promise<void>((resolve) => child.stderr.once('close', () => resolve()));
  const exited = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      // The caller's own kill is not an end of the runner's own: only that is worth reporting.
      if (!(killed && signal === 'SIGKILL')) end = { code, signal };
      // Ended once the runner's last stderr bytes are read, so the tail holds its last words; a
      // descendant that escaped the process group may hold stderr open, so wait for that briefly.
      void Promise.race([stderrEnded, new Promise((r) => setTimeout(r, STDERR_DRAIN_MS).unref())]).then(() =>
        resolve(),
      );
    });
    child.once('error', (error) => {
      end = { code: null, signal: null, startError: error.message };
      resolve();
    });
  });
  child.stdin.on('error', () => undefined);
  return {
    input: child.stdin,
    output: child.stdout,
    exited,
    kill: () => {
      killed = true;
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
      // A descendant that left the process group (setsid) may hold the pipes open: let go of them, so the
      // caller's process can end whatever that descendant does. stderr only once `exited` (the runner's exit seen and
      // its stderr read to the end, or the drain wait over): the pipes are read in no set order, so the suite may see
      // stdout end and kill a runner that already exited while its last stderr words are still unread.
      child.stdin.destroy();
      child.stdout.destroy();
      void exited.then(() => child.stderr.destroy());
    },
    stderrTail: () => tail.toString('utf8'),
    ended: () => end,
  };
}

/** Serve a runner definition in this process over in-memory streams (no child process). */
export function inProcessRunner<S extends z.ZodType>(
  runner: RunnerDefinition<S>,
  options: { logLevel?: string } = {},
): RunnerTransport {
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
