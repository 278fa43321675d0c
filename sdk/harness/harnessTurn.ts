import type { RunResult, UpdateInput } from '../protocol/types.js';
import { spawnHarness, type HarnessExit, type HarnessOptions } from './spawnHarness.js';

/** One run of a JSONL-speaking CLI, mapped to updates as its lines arrive. */
export interface HarnessTurnOptions extends HarnessOptions {
  /** How the CLI is named in log updates (`claude`, `codex`). */
  name: string;
  /** Updates for one JSON line. */
  map(value: Record<string, unknown>): UpdateInput[];
  emit(update: UpdateInput): void;
  /** Called after each JSON line was mapped (e.g. to check the version the CLI reported). */
  afterLine?(): void;
  /** A CLI that is talked to on stdin as it runs (stdin is then a pipe): see {@link HarnessConversation}. */
  conversation?: HarnessConversation;
}

/**
 * What a runner writes to a CLI's stdin, as JSON lines: `initial` first; then, for a line the CLI wrote, the answer
 * `answer` gives (asynchronously, in the order the answers settle; e.g. a permission decision); stdin closes after
 * the line `endAfter` picks (a CLI that reads stdin to its end exits only then), once every answer is written.
 */
export interface HarnessConversation {
  initial: Record<string, unknown>[];
  answer?(value: Record<string, unknown>): Promise<Record<string, unknown>> | undefined;
  endAfter(value: Record<string, unknown>): boolean;
  /**
   * Called once, after `initial` was written, with a way to write more lines while the CLI runs (e.g. a user message
   * the host delivered mid-run). `write` returns false, writing nothing, once `endAfter` picked a line or stdin is
   * gone: the CLI would never read it.
   */
  attach?(write: (value: Record<string, unknown>) => boolean): void;
}

/**
 * Run the CLI to its end: JSON lines through `map`, any other non-empty line kept as a `warn`
 * log (never dropped, never parsed). Resolves with how the CLI ended.
 */
export async function runHarnessTurn(options: HarnessTurnOptions): Promise<HarnessExit> {
  const { conversation } = options;
  const harness = spawnHarness({ ...options, ...(conversation ? { stdin: 'pipe' as const } : {}) });
  const stdin = harness.stdin;
  const write = (value: Record<string, unknown>) => {
    if (stdin && !stdin.writableEnded && !stdin.destroyed) stdin.write(`${JSON.stringify(value)}\n`);
  };
  const answers = new Set<Promise<void>>();
  for (const value of conversation?.initial ?? []) write(value);
  let ending = false;
  conversation?.attach?.((value) => {
    if (ending || !stdin || stdin.writableEnded || stdin.destroyed) return false;
    write(value);
    return true;
  });
  for await (const line of harness.lines) {
    if (line.type === 'json') {
      for (const update of options.map(line.value)) options.emit(update);
      options.afterLine?.();
      const answer = conversation?.answer?.(line.value);
      if (answer) {
        const written = answer.then(write, () => undefined).finally(() => answers.delete(written));
        answers.add(written);
      }
      if (!ending && conversation?.endAfter(line.value)) {
        ending = true;
        void Promise.all(answers).then(() => stdin?.end());
      }
    } else if (line.raw.trim())
      options.emit({ kind: 'log', level: 'warn', message: `${options.name} (not JSON): ${line.raw.slice(0, 2000)}` });
  }
  return harness.exited;
}

/** The failed RunResult of a CLI that could not start or was stopped for its output size, if so. */
export function harnessExitFailure(name: string, exit: HarnessExit): RunResult | undefined {
  if (exit.spawnError)
    return {
      status: 'failed',
      error: { code: 'spawn_failed', message: `${name} could not start: ${exit.spawnError}` },
    };
  if (exit.truncated)
    return {
      status: 'failed',
      error: { code: 'output_truncated', message: `${name} wrote more output than allowed and was stopped` },
    };
  return undefined;
}
