import { readFileSync, readlinkSync } from 'node:fs';

/**
 * Where this process's pids mean something: the machine's boot id and this process's pid namespace
 * (`<boot id>/pid:[<inode>]`). Two processes judge each other by pid and start time only within one scope: a pid seen
 * from another machine, another boot or another pid namespace names some other process, or none. Null when either is
 * unreadable (no /proc): then nothing is judged by pid across host starts (docs/scale-out.md §4, "Judged by the
 * lease").
 */
export function pidScope(): string | null {
  try {
    const bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    const namespace = readlinkSync('/proc/self/ns/pid');
    return bootId && namespace ? `${bootId}/${namespace}` : null;
  } catch {
    return null;
  }
}
