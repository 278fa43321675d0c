import { constants, promises as fsp } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { closeQuietly, lstatBeneath, openDirBeneath, pathBeneath, reopen, beneath } from '../policy/beneath.js';
import {
  KEEP_FILE_MAX_BYTES,
  KEEP_TOTAL_MAX_BYTES,
  SNAPSHOT_MAX_DEPTH,
  SNAPSHOT_MAX_ENTRIES,
  SNAPSHOT_MAX_HASHED_BYTES,
} from './caps.js';
import { asText, sha256, type FileVersion } from './content.js';

/** A folder whose changes a run's snapshot covers; `label` is its path as the runner sees it ('' = the workspace). */
export interface SnapshotRoot {
  label: string;
  path: string;
}

/** One entry of a snapshot: what it is, and enough to tell whether it changed. */
export interface SnapshotEntry extends Omit<FileVersion, 'kind'> {
  kind: FileVersion['kind'] | 'dir';
  ino: number;
  mtimeMs: number;
  ctimeMs: number;
  /** The content, for a small text file while the snapshot's text budget lasts. */
  text?: string;
  /** Why a file's content was not kept (binary, its size, a cap, unread), in words. */
  notKept?: string;
}

/** A bounded picture of a run's writable folders (host/changes/caps.ts). */
export interface Snapshot {
  /** By path as the runner sees it (`out/a.txt`, `in/mounts/repo/x`). */
  entries: Map<string, SnapshotEntry>;
  /** The caps this snapshot hit, in words. */
  capped: Set<string>;
  /** True when the entry or depth cap left entries out (the others cap what is read, not what is listed). */
  partial: boolean;
}

/** Bounds of one snapshot (defaults: host/changes/caps.ts); tests shrink them. */
export interface SnapshotBounds {
  maxEntries: number;
  maxDepth: number;
  maxHashedBytes: number;
  keepFileBytes: number;
  keepTotalBytes: number;
}

/** The host's caps. */
export const SNAPSHOT_BOUNDS: SnapshotBounds = {
  maxEntries: SNAPSHOT_MAX_ENTRIES,
  maxDepth: SNAPSHOT_MAX_DEPTH,
  maxHashedBytes: SNAPSHOT_MAX_HASHED_BYTES,
  keepFileBytes: KEEP_FILE_MAX_BYTES,
  keepTotalBytes: KEEP_TOTAL_MAX_BYTES,
};

/**
 * Walk `roots` and record every entry (lstat: a link is recorded with its target text, never followed), hashing
 * regular single-link files and keeping the text of small ones, within `bounds`. Every folder is opened beneath the
 * descriptor of its parent with O_NOFOLLOW (host/policy/beneath.ts), every file through an O_PATH descriptor that is
 * checked before it is opened: nothing a run swapped in can send the walk outside its folders, and a FIFO or device
 * is never opened. A root that is missing is skipped. All I/O is off the event loop. With `previous` (the run's
 * start), a file whose inode, size, mtime and ctime are unchanged is not read again: its hash and text are taken
 * from there (a write moves ctime, which no unprivileged process can set back).
 */
export async function takeSnapshot(
  roots: SnapshotRoot[],
  bounds: SnapshotBounds = SNAPSHOT_BOUNDS,
  previous?: Snapshot,
): Promise<Snapshot> {
  const snap: Snapshot = { entries: new Map(), capped: new Set(), partial: false };
  const budget = { hashed: 0, kept: 0 };
  for (const root of roots) {
    let handle: FileHandle;
    try {
      handle = await fsp.open(root.path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
    } catch {
      continue;
    }
    try {
      await walk(handle, root.label, 0, snap, budget, bounds, previous?.entries);
    } finally {
      await closeQuietly(handle);
    }
  }
  return snap;
}

async function walk(
  dir: FileHandle,
  prefix: string,
  depth: number,
  snap: Snapshot,
  budget: { hashed: number; kept: number },
  bounds: SnapshotBounds,
  previous: Snapshot['entries'] | undefined,
): Promise<void> {
  // Sorted, so two walks of a workspace too big for the caps cover the same part of it.
  const names = (await fsp.readdir(beneath(dir)).catch(() => [] as string[])).sort();
  for (const name of names) {
    if (snap.entries.size >= bounds.maxEntries) {
      snap.capped.add(`more than ${bounds.maxEntries} entries`);
      snap.partial = true;
      return;
    }
    const path = prefix === '' ? name : `${prefix}/${name}`;
    const stat = await lstatBeneath(dir, name);
    if (!stat) continue;
    const base = {
      size: stat.size,
      sha256: null,
      mode: stat.mode & 0o7777,
      ino: stat.ino,
      mtimeMs: stat.mtimeMs,
      ctimeMs: stat.ctimeMs,
    };
    if (stat.isSymbolicLink()) {
      const target = await fsp.readlink(beneath(dir, name)).catch(() => '');
      snap.entries.set(path, { ...base, kind: 'link', target });
    } else if (stat.isDirectory()) {
      snap.entries.set(path, { ...base, kind: 'dir' });
      if (depth + 1 >= bounds.maxDepth) {
        snap.capped.add(`folders deeper than ${bounds.maxDepth} levels`);
        snap.partial = true;
        continue;
      }
      const child = await openDirBeneath(dir, name).catch(() => undefined);
      if (!child) continue; // swapped for a link or a file meanwhile: not followed
      try {
        await walk(child, path, depth + 1, snap, budget, bounds, previous);
      } finally {
        await closeQuietly(child);
      }
    } else if (stat.isFile()) {
      const before = previous?.get(path);
      const same =
        before?.kind === 'file' &&
        before.sha256 !== null &&
        before.ino === stat.ino &&
        before.size === stat.size &&
        before.mtimeMs === stat.mtimeMs &&
        before.ctimeMs === stat.ctimeMs;
      const keeps = before?.text !== undefined ? before.size : 0;
      if (same && budget.kept + keeps <= bounds.keepTotalBytes) {
        budget.kept += keeps;
        snap.entries.set(path, { ...before, mode: base.mode });
      } else
        snap.entries.set(path, { ...base, kind: 'file', ...(await readFile(dir, name, stat, budget, bounds, snap)) });
    } else snap.entries.set(path, { ...base, kind: 'other' });
  }
}

/** A regular single-link file's hash and, when small text within budget, its content; nothing when over a cap. */
async function readFile(
  dir: FileHandle,
  name: string,
  stat: { size: number; nlink: number; ino: number },
  budget: { hashed: number; kept: number },
  bounds: SnapshotBounds,
  snap: Snapshot,
): Promise<{ sha256?: string; text?: string; notKept: string } | { sha256: string; text: string }> {
  const unread = { notKept: 'not read (a hard link, unreadable, or changing while read)' };
  // A hard link may be a file from outside the run's folders: never read through one (as the path policy refuses it).
  if (stat.nlink > 1) return unread;
  if (budget.hashed + stat.size > bounds.maxHashedBytes) {
    snap.capped.add(`more than ${bounds.maxHashedBytes} bytes to hash`);
    return { notKept: `not read (the snapshot's ${bounds.maxHashedBytes}-byte hashing cap)` };
  }
  let named: FileHandle | undefined;
  let file: FileHandle | undefined;
  try {
    named = await pathBeneath(dir, name);
    // Checked before it is opened: a FIFO or device swapped in under the name is never opened.
    const seen = await named.stat();
    if (!seen.isFile() || seen.ino !== stat.ino) return unread;
    file = await reopen(named, constants.O_RDONLY);
    const opened = await file.stat();
    if (!opened.isFile() || opened.ino !== stat.ino || opened.nlink > 1) return unread;
    // Read at most what the budget allows (+1 to notice a file that grew): a growing file is not hashed.
    const room = Math.min(opened.size, bounds.maxHashedBytes - budget.hashed);
    const bytes = Buffer.alloc(room + 1);
    let read = 0;
    while (read < bytes.length) {
      const { bytesRead } = await file.read(bytes, read, bytes.length - read, read);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    if (read > room) return unread;
    budget.hashed += read;
    const content = bytes.subarray(0, read);
    const hash = sha256(content);
    if (read > bounds.keepFileBytes) return { sha256: hash, notKept: `larger than ${bounds.keepFileBytes} bytes` };
    const text = asText(content);
    if (text === undefined) return { sha256: hash, notKept: 'binary' };
    if (budget.kept + read > bounds.keepTotalBytes) {
      snap.capped.add(`more than ${bounds.keepTotalBytes} bytes of text`);
      return { sha256: hash, notKept: `not kept (the snapshot's ${bounds.keepTotalBytes}-byte text cap)` };
    }
    budget.kept += read;
    return { sha256: hash, text };
  } catch {
    return unread; // its mode, or gone meanwhile: compared by size, mode and times
  } finally {
    await closeQuietly(file);
    await closeQuietly(named);
  }
}
