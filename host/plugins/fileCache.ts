import { lstatSync, type BigIntStats } from 'node:fs';
import { RACY_MS, settledBefore } from '../util/racyStat.js';

interface Entry<T> {
  dev: bigint;
  ino: bigint;
  size: bigint;
  mtimeNs: bigint;
  ctimeNs: bigint;
  value: T;
}

/** The file's identity and version as `lstat` gives it (a link is not followed: it is refused later anyway). */
function versionOf(file: string): BigIntStats | undefined {
  try {
    return lstatSync(file, { bigint: true });
  } catch {
    return undefined;
  }
}

/**
 * Parsed files by path, each valid while the file keeps its device, inode, size, modification and change times (a
 * write, a rename over it, a `touch` or a `chmod` changes one of them). Planning reads every runner's manifest per
 * dispatch, twice (plan, and again when the run starts); with this a manifest is parsed again only when it changed.
 */
export class FileCache<T> {
  private readonly entries = new Map<string, Entry<T>>();

  /**
   * `racyMs`: how recent a change must not be for the file to be cached — a change that recent could share its
   * timestamps with an earlier version of the file (git's "racily clean" rule, util/racyStat.ts); tests pass 0.
   */
  constructor(private readonly racyMs: number = RACY_MS) {}

  /** `load(file)`'s value, from the cache while the file is unchanged; a load that throws is not cached. */
  get(file: string, load: () => T): T {
    const before = versionOf(file);
    const hit = this.entries.get(file);
    if (before && hit && same(hit, before)) return hit.value;
    const value = load();
    const after = versionOf(file);
    // Kept only if the file did not change while it was read, and its last change is not too recent to tell apart.
    if (before && after && sameStats(before, after) && settledBefore(after.ctimeNs, Date.now(), this.racyMs)) {
      this.entries.set(file, { ...pick(after), value });
    } else {
      this.entries.delete(file);
    }
    return value;
  }
}

function pick(s: BigIntStats): Omit<Entry<never>, 'value'> {
  return { dev: s.dev, ino: s.ino, size: s.size, mtimeNs: s.mtimeNs, ctimeNs: s.ctimeNs };
}

function same(e: Omit<Entry<unknown>, 'value'>, s: BigIntStats): boolean {
  return e.dev === s.dev && e.ino === s.ino && e.size === s.size && e.mtimeNs === s.mtimeNs && e.ctimeNs === s.ctimeNs;
}

function sameStats(a: BigIntStats, b: BigIntStats): boolean {
  return same(pick(a), b);
}
