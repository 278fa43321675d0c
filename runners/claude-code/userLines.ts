// The user lines the runner writes to Claude Code's stdin (stream-json input) and when stdin may close.
type Obj = Record<string, unknown>;

/** A stream-json user line. */
const userLine = (text: string): Obj => ({
  type: 'user',
  message: { role: 'user', content: [{ type: 'text', text }] },
});

/**
 * Counts the user lines written and the ones the CLI took (echoed back with `isReplay: true` under
 * `--replay-user-messages`). Claude Code 2.1.332 folds a line written during a turn into that turn, or, written as a
 * turn ends, runs it as a turn of its own with its own `result` (harness-formats.md §1.3): so stdin may close at a
 * `result` only when every line written was taken — else a message would be dropped with the closing stdin.
 */
export class UserLines {
  /** The lines to start with: the prompt, then messages an earlier CLI of this run took (see `added`). */
  readonly initial: Obj[];
  /** The texts of the messages added while this CLI ran: a retry of the run's CLI must start with them too. */
  readonly added: string[] = [];
  private written: number;
  private taken = 0;
  private ended = false;

  constructor(prompt: string, earlier: readonly string[] = []) {
    this.initial = [userLine(prompt), ...earlier.map(userLine)];
    this.written = this.initial.length;
    this.added.push(...earlier);
  }

  /** Write one more user message; false (nothing written) once stdin is closing or gone. */
  add(text: string, write: (value: Obj) => boolean): boolean {
    if (this.ended || !write(userLine(text))) return false;
    this.written += 1;
    this.added.push(text);
    return true;
  }

  /** For each stdout line: true at the `result` after which nothing written is still waiting (stdin then closes). */
  endAfter(value: Obj): boolean {
    if (value.type === 'user' && value.isReplay === true) this.taken += 1;
    if (value.type !== 'result' || this.taken < this.written) return false;
    this.ended = true;
    return true;
  }
}
