/**
 * Progress of a long command on stderr, so a large job is not a silent wait: nothing for the first second (short jobs
 * stay quiet), then one line — rewritten in place on a terminal (at most every 200 ms), printed anew every 5 s to a
 * pipe or file — and on a terminal the line is cleared when the job is done.
 */

/** Where progress is written: process.stderr, or a test's collector. */
export interface ProgressStream {
  write(text: string): unknown;
  isTTY?: boolean;
}

/** A progress line for one job. */
export interface ProgressLine {
  /** `done` of `total` units so far. */
  update(done: number, total: number): void;
  /** The job ended: clear the line (terminal) — the command prints its own result. */
  finish(): void;
}

const QUIET_MS = 1000;
const TERMINAL_EVERY_MS = 200;
const PIPE_EVERY_MS = 5000;

/** Digits in groups of three (`1 234 567`): a long count read at a glance. */
function grouped(n: number): string {
  return String(Math.round(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ' ');
}

/** A progress line `<label>: <done> of <total> <unit> (<percent>%)` on `stream`, timed by `now` (ms). */
export function progressLine(
  label: string,
  unit: string,
  stream: ProgressStream = process.stderr,
  now: () => number = () => performance.now(),
): ProgressLine {
  const started = now();
  const terminal = stream.isTTY === true;
  let lastShown: number | undefined;
  let shown = false;
  return {
    update(done, total) {
      const at = now();
      if (at - started < QUIET_MS) return;
      if (lastShown !== undefined && at - lastShown < (terminal ? TERMINAL_EVERY_MS : PIPE_EVERY_MS)) return;
      lastShown = at;
      const percent = total > 0 ? Math.floor((done / total) * 100) : 100;
      const text = `${label}: ${grouped(done)} of ${grouped(total)} ${unit} (${percent}%)`;
      stream.write(terminal ? `\r\x1b[2K${text}` : `${text}\n`);
      shown = true;
    },
    finish() {
      if (shown && terminal) stream.write('\r\x1b[2K');
    },
  };
}
