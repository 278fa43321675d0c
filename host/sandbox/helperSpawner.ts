import { spawn, type ChildProcess } from 'node:child_process';
import { ProbeExecError, type ProbeExec, type ProbeExecResult } from './probeSteps.js';
import { HOST_HELPER_ENV } from './hostTools.js';

/**
 * The helper spawner's program (CommonJS, for `node -e`): one JSON request a line on stdin (`{id, file, args, env,
 * timeoutMs}`), each run with `execFile`, one JSON answer a line on stdout; it exits when its stdin ends (the host
 * went).
 */
const SPAWNER = `
const { execFile } = require('node:child_process');
let rest = '';
const answer = (a) => process.stdout.write(JSON.stringify(a) + '\\n');
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  const lines = (rest + chunk).split('\\n');
  rest = lines.pop();
  for (const line of lines) {
    const r = JSON.parse(line);
    const failed = (e) => ({ message: e.message, code: e.code, killed: e.killed, signal: e.signal });
    try {
      const options = { env: r.env, encoding: 'utf8', timeout: r.timeoutMs, maxBuffer: 16 << 20 };
      const child = execFile(r.file, r.args, options,
        (e, stdout, stderr) => answer({ id: r.id, stdout, stderr, error: e ? failed(e) : null }));
      child.stdin && child.stdin.end();
    } catch (e) {
      // Refused before it started (a NUL in an argument): that request fails, the spawner and the others go on.
      answer({ id: r.id, stdout: '', stderr: '', error: failed(e) });
    }
  }
});
process.stdin.on('end', () => process.exit(0));
`;

interface Answer {
  id: number;
  stdout: string;
  stderr: string;
  error: { message: string; code?: unknown; killed?: boolean; signal?: string | null } | null;
}

/**
 * Why this exists: `fork()` copies the parent's page tables, so every child the host starts blocks its event loop for
 * time that grows with the host's memory (≈ 13 ms at 240 MiB, more with every active run; docs/benchmarks.md, "Many
 * runs"). A small helper process, started once, starts the host's helper programs (mkfs, mount, umount…) instead:
 * the host only writes a line and reads one. Same program, arguments, environment and timeout as a direct
 * `execFile`; the helper runs as the host user with {@link HOST_HELPER_ENV}.
 */
class HelperSpawner {
  private child: ChildProcess | undefined;
  private next = 1;
  private rest = '';
  private readonly pending = new Map<number, { step: ProbeExec; resolve(r: ProbeExecResult): void }>();

  run(step: ProbeExec): Promise<ProbeExecResult> {
    const child = this.child ?? this.start();
    const id = this.next++;
    return new Promise((resolve) => {
      this.pending.set(id, { step, resolve });
      // Held while an answer is owed: a host with nothing else to do still waits for its helper's answer.
      (child.stdout as unknown as { ref(): void }).ref();
      child.stdin!.write(`${JSON.stringify({ id, ...step })}\n`);
    });
  }

  private start(): ChildProcess {
    const child = spawn(process.execPath, ['-e', SPAWNER], {
      env: { ...HOST_HELPER_ENV },
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    // Never what keeps the host alive: the output is held only while an answer is owed (run).
    child.unref();
    (child.stdin as unknown as { unref(): void }).unref();
    (child.stdout as unknown as { unref(): void }).unref();
    child.stdin!.on('error', () => undefined);
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (chunk: string) => this.take(chunk));
    child.once('exit', () => this.lost(child));
    child.once('error', () => this.lost(child));
    this.child = child;
    return child;
  }

  private take(chunk: string): void {
    const lines = (this.rest + chunk).split('\n');
    this.rest = lines.pop()!;
    for (const line of lines) {
      const a = JSON.parse(line) as Answer;
      const p = this.pending.get(a.id);
      if (!p) continue;
      this.pending.delete(a.id);
      p.resolve(a.error ? { ok: false, error: failure(p.step, a.error, a.stderr) } : { ok: true, stdout: a.stdout });
    }
    if (this.pending.size === 0) (this.child?.stdout as unknown as { unref(): void } | undefined)?.unref();
  }

  /** The helper died (killed from outside): what it owed fails, the next request starts a new one. */
  private lost(child: ChildProcess): void {
    if (this.child !== child) return;
    this.child = undefined;
    this.rest = '';
    for (const [id, p] of this.pending) {
      this.pending.delete(id);
      const message = `the helper spawner exited before ${p.step.file} finished`;
      p.resolve({ ok: false, error: new ProbeExecError(message, message) });
    }
  }
}

/** The same failure text as a direct `execFile` (probeSteps.ts): a timeout says so, otherwise stderr or the message. */
function failure(step: ProbeExec, error: NonNullable<Answer['error']>, stderr: string): ProbeExecError {
  const timedOut = error.code === 'ETIMEDOUT' || (error.killed === true && error.signal === 'SIGTERM');
  const message = timedOut ? `${step.file} timed out after ${step.timeoutMs} ms` : error.message.trim();
  const text = stderr.trim();
  return new ProbeExecError(message, text || message);
}

let spawner: HelperSpawner | undefined;

/** Run one host helper program through the helper spawner, without blocking the event loop on its fork. */
export function execThroughSpawner(step: ProbeExec): Promise<ProbeExecResult> {
  return (spawner ??= new HelperSpawner()).run(step);
}
