// A campaign's report: its totals, every violation with the seed that reproduces it, and the exit code.
// Shared by every campaign under test/campaigns/ (run by test/campaigns/run.ts: `npm run campaign <name>`).

/** One broken invariant: the seed that reproduces it (`--seed <seed> --count 1`) and what was wrong. */
export interface Violation {
  seed: number;
  message: string;
}

/** What a campaign records while it runs; `finish()` prints it and says whether it passed. */
export interface Report {
  /** The campaign's name and its starting seed, as printed in the header. */
  readonly name: string;
  readonly seed: number;
  /** A broken invariant, found by the case started from `seed` (printed at once, and again in the summary). */
  violation(seed: number, message: string): void;
  /** Sets a total (`cases`, `kills`, `runs`…): the last value set is printed. */
  total(key: string, value: number | string): void;
  /** Adds to a numeric total. */
  count(key: string, by?: number): void;
  /** A progress or series line, printed as it comes (prefixed with the campaign's name). */
  note(line: string): void;
  /** The violations so far. */
  readonly violations: readonly Violation[];
  /** Prints the totals and every violation; returns the process exit code (1 if any violation, else 0). */
  finish(): number;
}

/** Writes its lines to `out` (stdout by default; a test passes an array's push). */
export function createReport(name: string, seed: number, out: (line: string) => void = console.log): Report {
  const violations: Violation[] = [];
  const totals = new Map<string, number | string>();
  const started = Date.now();
  out(`# campaign ${name} — seed ${seed} — ${new Date(started).toISOString()}`);
  return {
    name,
    seed,
    violations,
    violation(caseSeed, message) {
      violations.push({ seed: caseSeed, message });
      out(`[${name}] VIOLATION seed=${caseSeed}: ${message}`);
    },
    total(key, value) {
      totals.set(key, value);
    },
    count(key, by = 1) {
      const now = totals.get(key);
      totals.set(key, (typeof now === 'number' ? now : 0) + by);
    },
    note(line) {
      out(`[${name}] ${line}`);
    },
    finish() {
      totals.set('seconds', Math.round((Date.now() - started) / 100) / 10);
      totals.set('violations', violations.length);
      out(`## ${name} totals (seed ${seed})`);
      for (const [key, value] of totals) out(`  ${key}: ${value}`);
      for (const v of violations) out(`  violation seed=${v.seed}: ${v.message}`);
      out(violations.length === 0 ? `## ${name}: PASS` : `## ${name}: FAIL (${violations.length} violations)`);
      return violations.length === 0 ? 0 : 1;
    },
  };
}
