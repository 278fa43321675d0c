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

/** Progress of a job made of named steps whose length is not known (a download, an npm install). */
export interface StepProgress {
  /** A new step starts: said at once (each step is a line of its own). */
  step(label: string): void;
  /** The job ended: stop the elapsed-time line. */
  finish(): void;
}

/**
 * Steps on `stream`, each said when it starts; while one lasts, its elapsed time — rewritten in place on a terminal
 * (every second), a new line every 5 s to a pipe or file — so a long npm fetch is not a silent wait.
 */
export function stepProgress(
  prefix: string,
  stream: ProgressStream = process.stderr,
  now: () => number = () => performance.now(),
): StepProgress {
  const terminal = stream.isTTY === true;
  let timer: NodeJS.Timeout | undefined;
  let current: { label: string; started: number } | undefined;
  const stop = () => {
    if (timer) clearInterval(timer);
    timer = undefined;
    if (current && terminal) stream.write('\n');
  };
  return {
    step(label) {
      stop();
      current = { label, started: now() };
      stream.write(terminal ? `${prefix}: ${label}` : `${prefix}: ${label}\n`);
      timer = setInterval(
        () => {
          const seconds = Math.round((now() - current!.started) / 1000);
          stream.write(
            terminal ? `\r\x1b[2K${prefix}: ${label} (${seconds} s)` : `${prefix}: still ${label} (${seconds} s)\n`,
          );
        },
        terminal ? TERMINAL_STEP_MS : PIPE_EVERY_MS,
      );
      timer.unref();
    },
    finish() {
      stop();
      current = undefined;
    },
  };
}

const TERMINAL_STEP_MS = 1000;
