/**
 * Progress of a long command on stderr, so a large job is not a silent wait: nothing for the first second (short jobs
 * stay quiet), then one line — rewritten in place on a terminal (at most every 200 ms), printed anew every 5 s to a
 * pipe or file — and on a terminal the line is cleared when the job is done. A job of several phases names the one
 * it is in, and a change of phase is shown at once; with `elapsed`, each line ends with the time since the start.
 */

/** Where progress is written: process.stderr, or a test's collector. */
export interface ProgressStream {
  write(text: string): unknown;
  isTTY?: boolean;
}

/** A progress line for one job. */
export interface ProgressLine {
  /** `done` of `total` units so far (`total` null: not known), and an optional detail (`412 MB on disk`). */
  update(done: number, total: number | null, detail?: string): void;
  /** The job entered phase `name` (`downloading`): named in each later line, shown at once; counts start over. */
  phase(name: string): void;
  /** Show the line again when it is due, though nothing changed (the elapsed time still moves). */
  tick(): void;
  /** The job ended: clear the line (terminal) — the command prints its own result. */
  finish(): void;
}

/** How a progress line is shown. */
export interface ProgressOptions {
  /** End each line with the time since the start (`, 1m05s`). */
  elapsed?: boolean;
  /** Show nothing for this long after the start, so a short job stays quiet (default 1000 ms; 0: show every step). */
  quietMs?: number;
}

const QUIET_MS = 1000;
const TERMINAL_EVERY_MS = 200;
const PIPE_EVERY_MS = 5000;

/** Digits in groups of three (`1 234 567`): a long count read at a glance. */
function grouped(n: number): string {
  return String(Math.round(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ' ');
}

/** A duration as a person reads it: `8s`, `1m05s`, `1h02m`. */
export function formatDuration(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const pad = (n: number) => String(n).padStart(2, '0');
  if (s < 3600) return `${Math.floor(s / 60)}m${pad(s % 60)}s`;
  return `${Math.floor(s / 3600)}h${pad(Math.floor(s / 60) % 60)}m`;
}

/** A byte count in the unit that keeps it short, as the console shows sizes (console/lib/format.ts): `412.3 MiB`. */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 ? value : (Math.round(value * 10) / 10).toFixed(1)} ${units[unit]}`;
}

/**
 * A progress line `<label>: [<phase> ]<done> of <total> <unit> (<percent>%)[, <detail>][, <elapsed>]` on `stream`,
 * timed by `now` (ms).
 */
export function progressLine(
  label: string,
  unit: string,
  stream: ProgressStream = process.stderr,
  now: () => number = () => performance.now(),
  options: ProgressOptions = {},
): ProgressLine {
  const started = now();
  const terminal = stream.isTTY === true;
  const quietMs = options.quietMs ?? QUIET_MS;
  let lastShown: number | undefined;
  let shown = false;
  let phase: string | undefined;
  let counts: { done: number; total: number | null; detail?: string } | undefined;

  const text = (at: number) => {
    const parts: string[] = [];
    if (counts) {
      const { done, total } = counts;
      const percent = total === null ? '' : ` (${total > 0 ? Math.floor((done / total) * 100) : 100}%)`;
      parts.push(
        `${phase ? `${phase} ` : ''}${grouped(done)}${total === null ? '' : ` of ${grouped(total)}`} ${unit}${percent}`,
      );
      if (counts.detail) parts.push(counts.detail);
    } else if (phase) parts.push(phase);
    if (options.elapsed) parts.push(formatDuration(at - started));
    return `${label}: ${parts.join(', ')}`;
  };
  const show = (force: boolean) => {
    const at = now();
    if (at - started < quietMs) return;
    if (!force && lastShown !== undefined && at - lastShown < (terminal ? TERMINAL_EVERY_MS : PIPE_EVERY_MS)) return;
    if (!counts && !phase) return;
    lastShown = at;
    stream.write(terminal ? `\r\x1b[2K${text(at)}` : `${text(at)}\n`);
    shown = true;
  };
  return {
    update(done, total, detail) {
      counts = { done, total, ...(detail !== undefined ? { detail } : {}) };
      show(false);
    },
    phase(name) {
      phase = name;
      counts = undefined;
      show(true);
    },
    tick() {
      show(false);
    },
    finish() {
      if (shown && terminal) stream.write('\r\x1b[2K');
    },
  };
}
