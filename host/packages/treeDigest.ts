import { createHash } from 'node:crypto';
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  openSync,
  readdirSync,
  readlinkSync,
  readSync,
  type BigIntStats,
} from 'node:fs';
import { join } from 'node:path';
import { HostError } from '../errors.js';
import { readChunkSize } from '../util/readSize.js';

/** What the kernel says of an entry, compared before a run: equal means its bytes were not changed since. */
export interface Fingerprint {
  dev: string;
  ino: string;
  mode: number;
  size: string;
  mtimeNs: string;
  ctimeNs: string;
}

/** One entry of a package tree, as recorded at install (docs/runner-packages.md, "The tree digest"). */
export type TreeEntry =
  | { type: 'F'; path: string; exec: boolean; size: number; sha256: string; fp: Fingerprint }
  | { type: 'L'; path: string; target: string; fp: Fingerprint }
  | { type: 'D'; path: string; fp: Fingerprint };

/** A package tree: its digest, the root folder's fingerprint and every entry below it, sorted by path bytes. */
export interface TreeListing {
  digest: string;
  /**
   * When the fingerprints were read (ms since the epoch, taken before reading): a fingerprint stands for its
   * content only if its ctime is older than this by `RACY_MS` (util/racyStat.ts).
   */
  recordedAtMs: number;
  root: Fingerprint;
  entries: TreeEntry[];
}

/** The kernel's identity and change times of `st`, as strings (bigint nanoseconds do not fit a JSON number). */
export function fingerprintOf(st: BigIntStats): Fingerprint {
  return {
    dev: String(st.dev),
    ino: String(st.ino),
    mode: Number(st.mode),
    size: String(st.size),
    mtimeNs: String(st.mtimeNs),
    ctimeNs: String(st.ctimeNs),
  };
}

/** Whether two fingerprints are the same. */
export function sameFingerprint(a: Fingerprint, b: Fingerprint): boolean {
  return (
    a.ino === b.ino &&
    a.ctimeNs === b.ctimeNs &&
    a.mtimeNs === b.mtimeNs &&
    a.size === b.size &&
    a.mode === b.mode &&
    a.dev === b.dev
  );
}

/**
 * The SHA-256 of a file's bytes (hex), read in pieces. The package is untrusted and may swap an entry between our
 * `lstat` and this open: the open is non-blocking and does not follow a final link (a FIFO cannot hang the host), and
 * the open descriptor must be a regular file, or this throws.
 */
export function hashFile(file: string): string {
  const hash = createHash('sha256');
  const fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new HostError('INVALID_INPUT', `${file}: changed into something not a file`);
    // Sized to the file, at most 1 MiB (a big file never sits in memory whole; util/readSize.ts says why not 1 MiB
    // for every file).
    const buffer = Buffer.allocUnsafe(readChunkSize(stat.size + 1));
    for (let n = readSync(fd, buffer); n > 0; n = readSync(fd, buffer)) hash.update(buffer.subarray(0, n));
  } finally {
    closeSync(fd);
  }
  return hash.digest('hex');
}

/** The kind of `st` as a tree entry type, or null for what a package may not hold (FIFO, socket, device). */
export function entryType(st: BigIntStats): 'F' | 'L' | 'D' | null {
  if (st.isFile()) return 'F';
  if (st.isSymbolicLink()) return 'L';
  if (st.isDirectory()) return 'D';
  return null;
}

/** Whether the owner may execute a file of this mode: the only permission bit the digest keeps. */
export const isExecutable = (mode: number) => (mode & 0o100) !== 0;

/** One entry read from disk (`rel`: its path below the root, `/`-separated). */
export function readEntry(root: string, rel: string): TreeEntry {
  const abs = join(root, rel);
  const st = lstatSync(abs, { bigint: true });
  const fp = fingerprintOf(st);
  switch (entryType(st)) {
    case 'F':
      return {
        type: 'F',
        path: rel,
        exec: isExecutable(Number(st.mode)),
        size: Number(st.size),
        sha256: hashFile(abs),
        fp,
      };
    case 'L':
      return { type: 'L', path: rel, target: readlinkSync(abs, 'utf8'), fp };
    case 'D':
      return { type: 'D', path: rel, fp };
    default:
      throw new HostError('INVALID_INPUT', `${abs}: a package may hold only files, folders and links`, {
        file: abs,
      });
  }
}

/**
 * The names in folder `rel` of `root`. A name that is not UTF-8 is an INVALID_INPUT: read as a string it would be
 * changed (two names could read the same), and a package's paths are recorded as text.
 */
export function entryNames(root: string, rel: string): string[] {
  const dir = rel ? join(root, rel) : root;
  return readdirSync(dir, { encoding: 'buffer' }).map((raw) => {
    const name = raw.toString('utf8');
    if (!Buffer.from(name, 'utf8').equals(raw))
      throw new HostError('INVALID_INPUT', `${dir}: a package file name is not UTF-8 (${raw.toString('hex')})`, {
        file: dir,
      });
    return name;
  });
}

/** Byte order of UTF-8 paths, the digest's order (not the locale's, not UTF-16's). */
export function comparePaths(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** The digest of a listing's entries (sorted): the record of each, without fingerprints. */
export function digestOf(entries: readonly TreeEntry[]): string {
  const hash = createHash('sha256');
  for (const e of entries) {
    const fields =
      e.type === 'F'
        ? ['F', e.path, e.exec ? '1' : '0', String(e.size), e.sha256]
        : e.type === 'L'
          ? ['L', e.path, e.target]
          : ['D', e.path];
    hash.update(fields.join('\0') + '\0\0');
  }
  return `sha256:${hash.digest('hex')}`;
}

/**
 * Read a package tree: every entry below `root` (links recorded by target, never followed), hashed, sorted by
 * path bytes, with each entry's fingerprint; a FIFO, socket or device anywhere is an INVALID_INPUT naming it.
 */
export function readTree(root: string): TreeListing {
  const entries: TreeEntry[] = [];
  const walk = (rel: string) => {
    for (const name of entryNames(root, rel)) {
      const path = rel ? `${rel}/${name}` : name;
      const entry = readEntry(root, path);
      entries.push(entry);
      if (entry.type === 'D') walk(path);
    }
  };
  const recordedAtMs = Date.now();
  const rootFp = fingerprintOf(lstatSync(root, { bigint: true }));
  walk('');
  entries.sort((a, b) => comparePaths(a.path, b.path));
  return { digest: digestOf(entries), recordedAtMs, root: rootFp, entries };
}
