import { readdirSync, readFileSync } from 'node:fs';

/** Pids of live (not zombie) processes whose command line contains `needle`. */
export function processesWith(needle: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (stat[stat.lastIndexOf(')') + 2] === 'Z') continue;
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ').includes(needle))
        found.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}
