import { spawn, type ChildProcess } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { ProbeExecError, type ProbeExec, type ProbeExecResult } from './probeSteps.js';
import { HOST_HELPER_ENV } from './hostTools.js';
import { HELPER_SPAWNER_PROGRAM } from './helperSpawnerProgram.js';

interface Answer {
  id: number;
  stdout: string;
  stderr: string;
  error: { message: string; code?: unknown; killed?: boolean; signal?: string | null } | null;
  /** The helper's own time in the spawner, from its start to its exit. */
  ms: number;
}

/**
 * Helpers run at once by default: eight per core. Why a bound at all: `mount -o loop` reads the sysfs entry of every
 * loop device the kernel has made (util-linux's overlap check) before it takes one, so 800 of them started at once each
 * took about as long as all together (p50 8.4 s on a quiet machine, 41 s under load: past their 30 s timeout). In a
 * 200-run burst on 2 cores at load 20–39, a mount took at most 14–16 s unbounded, 4–6 s at 16, 1.3–1.5 s at 4, and the
 * runs started at 3.4–3.6, 3.2–3.3 and 2.4–3.1 a second (docs/benchmarks.md, "Many runs"; decisions MB1).
 */
export const DEFAULT_HELPER_CONCURRENCY = 8 * availableParallelism();

/** How long past a helper's own timeout its answer may be late before the spawner counts as hung. */
export const DEFAULT_ANSWER_GRACE_MS = 10_000;

/** How the helper spawner runs helpers. */
export interface HelperSpawnerOptions {
  /** Helpers running at once; the others wait in the host, in order, and a helper's timeout starts when it is sent. */
  concurrency: number;
  /** No answer `timeoutMs` + this after a helper was sent: the spawner is killed and what it owed fails. */
  answerGraceMs: number;
  /** Told of each helper's end: how long it waited for its turn and how long it ran (benches; changes nothing). */
  observe?: (timing: HelperTiming) => void;
}

/** One helper's times: waiting for a slot, from its sending to its answer, and its own run in the spawner. */
export interface HelperTiming {
  file: string;
  waitedMs: number;
  answeredMs: number;
  /** Undefined when the spawner died first. */
  ranMs?: number;
  ok: boolean;
}

/** A helper waiting for a slot, and its answer's receiver. */
interface Waiting {
  step: ProbeExec;
  resolve(r: ProbeExecResult): void;
  queuedAt: number;
}

/**
 * Why this exists: `fork()` copies the parent's page tables, so every child the host starts blocks its event loop for
 * time that grows with the host's memory (≈ 13 ms at 240 MiB, more with every active run; docs/benchmarks.md, "Many
 * runs"). A small helper process, started once, starts the host's helper programs (mkfs, mount, umount…) instead:
 * the host only writes a line and reads one. Same program, arguments, environment and timeout as a direct
 * `execFile`; the helper runs as the host user with {@link HOST_HELPER_ENV}. At most `concurrency` run at once.
 */
export class HelperSpawner {
  private child: ChildProcess | undefined;
  private next = 1;
  private rest = '';
  private readonly waiting: Waiting[] = [];
  private readonly running = new Map<number, Waiting & { timer: NodeJS.Timeout; sentAt: number }>();
  private options: HelperSpawnerOptions = {
    concurrency: DEFAULT_HELPER_CONCURRENCY,
    answerGraceMs: DEFAULT_ANSWER_GRACE_MS,
  };

  constructor(options: Partial<HelperSpawnerOptions> = {}) {
    this.configure(options);
  }

  /** Change the bound or the grace (the helpers running go on; waiting ones start as the new bound allows). */
  configure(options: Partial<HelperSpawnerOptions>): void {
    const next = { ...this.options };
    if (options.concurrency !== undefined) next.concurrency = options.concurrency;
    if (options.answerGraceMs !== undefined) next.answerGraceMs = options.answerGraceMs;
    if (options.observe !== undefined) next.observe = options.observe;
    if (!Number.isInteger(next.concurrency) || next.concurrency < 1)
      throw new RangeError(`helper concurrency must be a whole number ≥ 1, not ${next.concurrency}`);
    this.options = next;
    this.pump();
  }

  /** The spawner process's pid while one runs (tests stop or kill it). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Run one helper: now if fewer than `concurrency` run, otherwise once its turn comes. */
  run(step: ProbeExec): Promise<ProbeExecResult> {
    return new Promise((resolve) => {
      this.waiting.push({ step, resolve, queuedAt: performance.now() });
      this.pump();
    });
  }

  private pump(): void {
    while (this.running.size < this.options.concurrency && this.waiting.length > 0) this.send(this.waiting.shift()!);
  }

  private send(w: Waiting): void {
    const child = this.child ?? this.start();
    const id = this.next++;
    // The helper's own timeout is the spawner's (execFile); this one only catches a spawner that stopped answering.
    const late = w.step.timeoutMs + this.options.answerGraceMs;
    const timer = setTimeout(() => this.hung(child, w.step, late), late);
    timer.unref();
    this.running.set(id, { ...w, timer, sentAt: performance.now() });
    // Held while an answer is owed: a host with nothing else to do still waits for its helper's answer.
    (child.stdout as unknown as { ref(): void }).ref();
    child.stdin!.write(`${JSON.stringify({ id, ...w.step })}\n`);
  }

  private start(): ChildProcess {
    const child = spawn(process.execPath, ['-e', HELPER_SPAWNER_PROGRAM], {
      env: { ...HOST_HELPER_ENV },
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    // Never what keeps the host alive: the output is held only while an answer is owed (send).
    child.unref();
    (child.stdin as unknown as { unref(): void }).unref();
    (child.stdout as unknown as { unref(): void }).unref();
    child.stdin!.on('error', () => undefined);
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (chunk: string) => this.take(child, chunk));
    child.once('exit', () => this.lost(child, 'the helper spawner exited'));
    child.once('error', () => this.lost(child, 'the helper spawner exited'));
    this.child = child;
    return child;
  }

  private take(child: ChildProcess, chunk: string): void {
    if (this.child !== child) return; // a killed spawner's last words: what it owed has failed already
    const lines = (this.rest + chunk).split('\n');
    this.rest = lines.pop()!;
    for (const line of lines) {
      const a = JSON.parse(line) as Answer;
      const p = this.running.get(a.id);
      if (!p) continue;
      this.running.delete(a.id);
      const error = a.error ? failure(p.step, a.error, a.stderr) : undefined;
      this.answer(p, error ? { ok: false, error } : { ok: true, stdout: a.stdout }, a.ms);
    }
    this.idle();
    this.pump();
  }

  /**
   * No answer long past a helper's own timeout: the spawner is stuck (stopped, starved of memory, its helper
   * unkillable). Fail closed: it is killed, what it was running fails now (never a wait without end), and the helpers
   * still waiting, which never started, go to a new spawner.
   */
  private hung(child: ChildProcess, step: ProbeExec, late: number): void {
    if (this.child !== child) return;
    child.kill('SIGKILL');
    this.lost(child, `the helper spawner was killed (no answer for ${step.file} within ${late} ms)`);
  }

  /** The spawner died or was killed: what it was running fails; waiting helpers start on a new one. */
  private lost(child: ChildProcess, why: string): void {
    if (this.child !== child) return;
    this.child = undefined;
    this.rest = '';
    for (const [id, p] of this.running) {
      this.running.delete(id);
      const message = `${why} before ${p.step.file} finished`;
      this.answer(p, { ok: false, error: new ProbeExecError(message, message) });
    }
    this.pump();
  }

  private answer(p: Waiting & { timer: NodeJS.Timeout; sentAt: number }, result: ProbeExecResult, ranMs?: number) {
    clearTimeout(p.timer);
    const answeredMs = performance.now() - p.sentAt;
    const timing = { file: p.step.file, waitedMs: p.sentAt - p.queuedAt, answeredMs, ranMs, ok: result.ok };
    p.resolve(result);
    this.options.observe?.(timing);
  }

  /** Let the host exit when no answer is owed. */
  private idle(): void {
    if (this.running.size === 0) (this.child?.stdout as unknown as { unref(): void } | undefined)?.unref();
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

/** Run one host helper program through this process's helper spawner, without blocking the event loop on its fork. */
export function execThroughSpawner(step: ProbeExec): Promise<ProbeExecResult> {
  return (spawner ??= new HelperSpawner()).run(step);
}

/**
 * Set how this process's helper spawner runs helpers. One spawner serves every host of a process (the bound is the
 * machine's): the last setting holds for all of them.
 */
export function configureHelperSpawner(options: Partial<HelperSpawnerOptions>): void {
  (spawner ??= new HelperSpawner()).configure(options);
}
