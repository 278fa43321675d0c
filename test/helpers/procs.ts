import { readdirSync, readFileSync } from 'node:fs';

/**
 * Pids of live (not zombie) processes whose command line contains `needle` and, when `environ` is given, whose initial
 * environment holds that variable (`NAME=value`, matched from its start: `HOME=/some/dir/` matches `HOME=/some/dir/x`).
 */
export function processesWith(needle: string, environ?: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (stat[stat.lastIndexOf(')') + 2] === 'Z') continue;
      if (!readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ').includes(needle)) continue;
      // A leading NUL so the first variable matches as the others do, and never the tail of another's name.
      if (environ === undefined || `\0${readFileSync(`/proc/${entry}/environ`, 'utf8')}`.includes(`\0${environ}`))
        found.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

/**
 * Pids of the live (non-zombie) runner spawners started by `parent` (docs/runner-spawner.md: a `node -e` child whose
 * program spawns runners `detached`).
 */
export function liveSpawners(parent = process.pid): string[] {
  const children = readFileSync(`/proc/${parent}/task/${parent}/children`, 'utf8').split(' ');
  return children.filter((pid) => {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      const state = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '')[0];
      return state !== 'Z' && cmdline.includes('detached: true, stdio:');
    } catch {
      return false;
    }
  });
}
