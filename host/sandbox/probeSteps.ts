import { execFile, execFileSync } from 'node:child_process';

/**
 * The machine probe's logic is written once, as generators that yield each host helper process they need and get its
 * result back; a driver runs those processes either blocking ({@link runProbeSync}: `paddock doctor`, `explain`, a
 * library caller) or without blocking the event loop ({@link runProbeAsync}: the host's start primes the probe while
 * its modules load, host/start.ts). Same steps, same checks, same report either way.
 */

/** One helper process of a probe: an absolute path, its arguments, a fixed environment (hostTools.ts), a timeout. */
export interface ProbeExec {
  file: string;
  args: string[];
  env: Readonly<Record<string, string>>;
  timeoutMs: number;
}

/** A helper that failed (non-zero exit, signal, timeout, missing): its stderr, or the error's message. */
export class ProbeExecError extends Error {
  constructor(
    message: string,
    /** What the helper wrote to stderr (trimmed), or the spawn error's message when it wrote nothing. */
    readonly stderr: string,
  ) {
    super(message);
  }
}

/** What a driver hands back for a {@link ProbeExec}: its stdout, or why it failed. */
export type ProbeExecResult = { ok: true; stdout: string } | { ok: false; error: ProbeExecError };

/** A probe: a generator of helper processes returning `T`; run by {@link runProbeSync} or {@link runProbeAsync}. */
export type Probe<T> = Generator<ProbeExec, T, ProbeExecResult>;

/** Inside a probe: run `exec` and return its stdout, or throw its {@link ProbeExecError} at this point of the probe. */
export function* exec(file: string, args: string[], env: ProbeExec['env'], timeoutMs = 10_000): Probe<string> {
  const result = yield { file, args, env, timeoutMs };
  if (!result.ok) throw result.error;
  return result.stdout;
}

function failure(step: ProbeExec, error: unknown, stderr: unknown): ProbeExecError {
  const e = error as Error & { code?: unknown; killed?: boolean; signal?: string | null };
  // Both drivers' timeouts kill with SIGTERM; the blocking one says ETIMEDOUT, the other only `killed`.
  const timedOut = e.code === 'ETIMEDOUT' || (e.killed === true && e.signal === 'SIGTERM');
  const message = timedOut ? `${step.file} timed out after ${step.timeoutMs} ms` : e.message.trim();
  const text = String(stderr ?? '').trim();
  return new ProbeExecError(message, text || message);
}

function execNow(step: ProbeExec): ProbeExecResult {
  try {
    const stdout = execFileSync(step.file, step.args, {
      env: step.env,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: step.timeoutMs,
    });
    return { ok: true, stdout };
  } catch (error) {
    return { ok: false, error: failure(step, error, (error as { stderr?: unknown }).stderr) };
  }
}

function execLater(step: ProbeExec): Promise<ProbeExecResult> {
  return new Promise((resolve) => {
    const child = execFile(
      step.file,
      step.args,
      { env: step.env, encoding: 'utf8', timeout: step.timeoutMs },
      (error, stdout, stderr) =>
        resolve(error ? { ok: false, error: failure(step, error, stderr) } : { ok: true, stdout }),
    );
    // As the blocking driver's stdin 'ignore': a helper never waits on the host's stdin.
    child.stdin?.end();
  });
}

/** Run a probe to its end, each helper process blocking until it exits. */
export function runProbeSync<T>(probe: Probe<T>): T {
  let next = probe.next();
  while (!next.done) next = probe.next(execNow(next.value));
  return next.value;
}

/**
 * Run a probe to its end without blocking: each helper process is awaited, other work runs meanwhile. `run`: how each
 * helper is started (default: by this process; a run's helpers go through the helper spawner, helperSpawner.ts).
 */
export async function runProbeAsync<T>(
  probe: Probe<T>,
  run: (step: ProbeExec) => Promise<ProbeExecResult> = execLater,
): Promise<T> {
  let next = probe.next();
  while (!next.done) next = probe.next(await run(next.value));
  return next.value;
}
