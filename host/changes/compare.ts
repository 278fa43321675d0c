import type { Snapshot, SnapshotEntry } from './snapshot.js';

/** One difference between two snapshots of the same folders. */
export interface SnapshotChange {
  path: string;
  change: 'added' | 'changed' | 'deleted';
  before?: SnapshotEntry;
  after?: SnapshotEntry;
}

/** What {@link compareSnapshots} found: the changes, and how many paths it could not compare (a cap of either walk). */
export interface Comparison {
  changes: SnapshotChange[];
  /** Paths seen by one walk only while the other hit its entry or depth cap: perhaps changed, not compared. */
  uncompared: number;
}

/** Did an entry change? By hash when both sides have one, else by what lstat tells (size, mode, inode, times). */
function differs(a: SnapshotEntry, b: SnapshotEntry): boolean {
  if (a.kind !== b.kind || a.mode !== b.mode) return true;
  if (a.kind === 'link') return a.target !== b.target;
  if (a.sha256 && b.sha256) return a.sha256 !== b.sha256;
  // ctime cannot be set back by the run (utimes sets mtime only), so a rewrite that kept size and mtime still shows.
  return a.size !== b.size || a.ino !== b.ino || a.mtimeMs !== b.mtimeMs || a.ctimeMs !== b.ctimeMs;
}

/**
 * Files, links and other non-folders added, changed or deleted between `before` and `after`, by path, sorted.
 * Folders are walked, not reported (a file in a new folder is reported as added). A path only one side has while
 * the other side's walk was capped is counted in `uncompared`, never reported as added or deleted.
 */
export function compareSnapshots(before: Snapshot, after: Snapshot): Comparison {
  const changes: SnapshotChange[] = [];
  let uncompared = 0;
  const leaf = (e: SnapshotEntry | undefined) => (e && e.kind !== 'dir' ? e : undefined);
  const paths = [...new Set([...before.entries.keys(), ...after.entries.keys()])].sort();
  for (const path of paths) {
    const a = leaf(before.entries.get(path));
    const b = leaf(after.entries.get(path));
    if (a && b) {
      if (differs(a, b)) changes.push({ path, change: 'changed', before: a, after: b });
    } else if (a || b) {
      const other = a ? after : before;
      // Absent from a capped walk (not a folder there either): maybe only unseen.
      if (other.partial && !other.entries.has(path)) uncompared++;
      else if (a) changes.push({ path, change: 'deleted', before: a });
      else changes.push({ path, change: 'added', after: b });
    }
  }
  return { changes, uncompared };
}
