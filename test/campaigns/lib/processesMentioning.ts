// Live processes by what their command line says: how campaigns find runner processes they left behind.
import { readdirSync, readFileSync } from 'node:fs';

/** Pids of live processes whose command line contains `text`. */
export function processesMentioning(text: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(text)) pids.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}
