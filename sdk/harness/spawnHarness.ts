import { spawn } from 'node:child_process';
import type { Writable } from 'node:stream';
import { LineReader } from '../transport/ndjson.js';
import { liveDescendants, signalEach, stillAlive, waitUntilGone } from '../process/procTable.js';
import type { UpdateInput } from '../protocol/types.js';

/** How to run an external agent CLI from a runner. */
export interface HarnessOptions {
  command: string;
  args?: string[];
  cwd?: string;
  /** The CLI's whole environment. Default: the runner's own (which the host already filtered). */
  env?: Record<string, string | undefined>;
  /** Abort to stop the CLI: SIGTERM to it and its descendants, SIGKILL after `killGraceMs`. */
  signal?: AbortSignal;
  /** Stop the CLI once its stdout passed this many bytes. Default 64 MiB. */
  maxStdoutBytes?: number;
  /** Longer lines are dropped (and counted) instead of parsed. Default 4 MiB. */
  maxLineBytes?: number;
  /** How much of the end of stderr to keep. Default 8 KiB. */
  stderrTailBytes?: number;
  killGraceMs?: number;
  /**
   * `pipe`: the CLI's stdin is a pipe the caller writes ({@link Harness.stdin}), for CLIs that take their input and
   * answers there (Claude Code's stream-json input and control responses). Default `ignore`.
   */
  stdin?: 'ignore' | 'pipe';
}

/** One stdout line of the CLI: a JSON object, or anything else as text. */
export type HarnessLine = { type: 'json'; value: Record<string, unknown>; raw: string } | { type: 'text'; raw: string };

/** How the CLI ended. */
export interface HarnessExit {
  exitCode: number | null;
  signal: string | null;
  /** Stopped because `signal` aborted. */
  cancelled: boolean;
  /** Stopped because stdout passed `maxStdoutBytes`. */
  truncated: boolean;
  /** Lines dropped for exceeding `maxLineBytes`. */
  droppedLines: number;
  stderrTail: string;
  /** Set when the CLI could not be started (e.g. ENOENT). */
  spawnError?: string;
}

/** A running harness CLI. */
export interface Harness {
  pid: number | undefined;
  /** Stdout lines, in order; ends when stdout closes. Consuming slowly pauses the CLI's output. */
  lines: AsyncIterable<HarnessLine>;
  exited: Promise<HarnessExit>;
  /** The CLI's stdin, when {@link HarnessOptions.stdin} is `pipe`. */
  stdin: Writable | null;
  /** Stop the CLI and its descendants (SIGTERM, then SIGKILL after the grace); `exited` waits for all of them. */
  kill(): void;
}

const HIGH_WATER_LINES = 1_000;

/**
 * Run an external CLI (Claude Code, Codex, …) inside the runner's own process group, so the
 * host's group kill reaches it. stdin is ignored unless asked for (CLIs that wait on stdin hang otherwise), stdout
 * is parsed as JSONL leniently, bytes are capped, and cancel kills the CLI and its descendants.
 */
export function spawnHarness(options: HarnessOptions): Harness {
  const maxStdout = options.maxStdoutBytes ?? 64 * 1024 * 1024;
  const grace = options.killGraceMs ?? 2_000;
  const tailCap = options.stderrTailBytes ?? 8 * 1024;
  const child = spawn(options.command, options.args ?? [], {
    cwd: options.cwd,
    env: options.env ?? process.env,
    stdio: [options.stdin ?? 'ignore', 'pipe', 'pipe'],
  });
  // A CLI that exits (or is killed) while an answer is being written: the write fails, the exit tells the story.
  child.stdin?.on('error', () => undefined);

  const queue: HarnessLine[] = [];
  let stdoutDone = false;
  let wake: (() => void) | undefined;
  let stdoutBytes = 0;
  let droppedLines = 0;
  let stderrTail = '';
  let cancelled = false;
  let truncated = false;
  let spawnError: string | undefined;
  let killed: Promise<void> | undefined;

  const notify = () => {
    wake?.();
    wake = undefined;
  };
  // SIGTERM the CLI and every descendant; SIGKILL whatever is left after the grace. Descendants
  // are found before the CLI dies: after that they are reparented and unfindable.
  const kill = () => {
    if (killed || child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
    killed = killTree(child.pid, grace);
  };

  const reader = new LineReader(options.maxLineBytes ?? 4 * 1024 * 1024, {
    onLine: (buf) => {
      const raw = buf.toString('utf8');
      queue.push(parseLine(raw));
      if (queue.length >= HIGH_WATER_LINES) child.stdout?.pause();
      notify();
    },
    onOverflow: () => {
      droppedLines += 1;
      return 'skip';
    },
  });
  child.stdout?.on('data', (chunk: Buffer) => {
    if (truncated) return;
    stdoutBytes += chunk.length;
    if (stdoutBytes > maxStdout) {
      truncated = true;
      kill();
      return;
    }
    reader.push(chunk);
  });
  child.stdout?.once('close', () => {
    stdoutDone = true;
    notify();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderrTail = (stderrTail + chunk.toString('utf8')).slice(-tailCap);
  });

  const onAbort = () => {
    cancelled = true;
    kill();
  };
  if (options.signal?.aborted) queueMicrotask(onAbort);
  else options.signal?.addEventListener('abort', onAbort, { once: true });

  const exited = new Promise<HarnessExit>((resolve) => {
    child.once('error', (error: NodeJS.ErrnoException) => {
      spawnError = `${options.command}: ${error.code ?? error.message}`;
      stdoutDone = true;
      notify();
    });
    child.once('close', (exitCode, signal) => {
      options.signal?.removeEventListener('abort', onAbort);
      // After a kill, report the exit only once the whole tree is gone.
      void (killed ?? Promise.resolve()).then(() =>
        resolve({ exitCode, signal, cancelled, truncated, droppedLines, stderrTail, spawnError }),
      );
    });
  });

  const lines: AsyncIterable<HarnessLine> = {
    async *[Symbol.asyncIterator]() {
      for (;;) {
        const next = queue.shift();
        if (next) {
          if (queue.length < HIGH_WATER_LINES / 2) child.stdout?.resume();
          yield next;
          continue;
        }
        if (stdoutDone) return;
        await new Promise<void>((resolve) => (wake = resolve));
      }
    },
  };
  return { pid: child.pid, lines, exited, kill, stdin: child.stdin };
}

function parseLine(raw: string): HarnessLine {
  try {
    const value: unknown = JSON.parse(raw);
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
      return { type: 'json', value: value as Record<string, unknown>, raw };
    }
  } catch {
    // Not JSON: kept as text.
  }
  return { type: 'text', raw };
}

/** Per line type, how to turn a harness JSON line into updates (undefined: keep it as a log). */
export type LineMappers = Record<string, (value: Record<string, unknown>) => UpdateInput[] | undefined>;

/**
 * Map a harness line to run updates. A JSON line whose `typeField` names a mapper goes through
 * it; everything else (unknown types, text lines) is kept as a `log` update, never dropped.
 */
export function mapHarnessLine(line: HarnessLine, mappers: LineMappers, typeField = 'type'): UpdateInput[] {
  if (line.type === 'json') {
    const type = line.value[typeField];
    const mapper = typeof type === 'string' ? mappers[type] : undefined;
    const mapped = mapper?.(line.value);
    if (mapped) return mapped;
    return [
      {
        kind: 'log',
        level: 'info',
        message: truncate(line.raw),
        data: { harnessType: typeof type === 'string' ? type : null },
      },
    ];
  }
  return [{ kind: 'log', level: 'info', message: truncate(line.raw) }];
}

function truncate(text: string, max = 4_000): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more chars)`;
}

/**
 * SIGTERM a process and every descendant; SIGKILL whatever is left after `graceMs`. Resolves once
 * the whole tree is gone. Descendants are found before the process dies: after that they are
 * reparented and unfindable.
 */
export async function killTree(pid: number | undefined, graceMs: number): Promise<void> {
  if (pid === undefined) return;
  const tree = new Set([...liveDescendants(pid), pid]);
  signalEach(tree, 'SIGTERM');
  const left = await waitUntilGone(() => stillAlive(tree), graceMs);
  if (left.length === 0) return;
  for (const p of liveDescendants(pid)) tree.add(p);
  signalEach(tree, 'SIGKILL');
  await waitUntilGone(() => stillAlive(tree), graceMs);
}
