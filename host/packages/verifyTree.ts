import { lstatSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import {
  entryNames,
  entryType,
  fingerprintOf,
  hashFile,
  isExecutable,
  sameFingerprint,
  type Fingerprint,
  type TreeEntry,
  type TreeListing,
} from './treeDigest.js';
import { settledBefore } from '../util/racyStat.js';

/** What {@link checkTree} found. */
export interface TreeCheck {
  /** The tree holds exactly the recorded entries with the recorded bytes. */
  ok: boolean;
  /** Paths that differ from the record (changed, added, removed, or of another type), sorted. */
  changed: string[];
  /** Files hashed because their fingerprint moved (or all of them, for a full check). */
  rehashed: number;
  /** The listing with the fingerprints seen now, when some moved without a change (a `touch`): store it. */
  refreshed: TreeListing | null;
}

/**
 * Check a package tree against its record (docs/runner-packages.md, "Verified at every run"): one `lstat` per
 * recorded entry; an entry whose fingerprint moved is compared by content (a file re-hashed, a link's target read,
 * a folder's names listed), so only a real difference counts. A folder whose fingerprint did not move has the same
 * names (adding, removing or renaming in it moves its ctime), so it is not listed. `full` re-hashes every file.
 */
export function checkTree(root: string, listing: TreeListing, options: { full?: boolean } = {}): TreeCheck {
  if (!options.full && fingerprintsUnmoved(root, listing))
    return { ok: true, changed: [], rehashed: 0, refreshed: null };
  const changed: string[] = [];
  let rehashed = 0;
  let moved = false;
  const seen: TreeEntry[] = [];
  let children: Map<string, string[]> | null = null;
  // A folder's names as recorded (built once, only when some folder moved).
  const namesIn = (dir: string) => {
    children ??= recordedChildren(listing);
    return children.get(dir) ?? [];
  };
  const compareNames = (dir: string) => {
    let now: string[];
    try {
      now = entryNames(root, dir);
    } catch {
      changed.push(dir || '.');
      return;
    }
    const before = new Set(namesIn(dir));
    for (const name of now) if (!before.has(name)) changed.push(dir ? `${dir}/${name}` : name);
  };

  const recordedAtMs = Date.now();
  const settled = (fp: Fingerprint) => settledBefore(BigInt(fp.ctimeNs), listing.recordedAtMs);
  const rootStat = lstatSync(root, { bigint: true, throwIfNoEntry: false });
  if (!rootStat?.isDirectory()) return { ok: false, changed: ['.'], rehashed, refreshed: null };
  const rootFp = fingerprintOf(rootStat);
  if (!sameFingerprint(rootFp, listing.root) || !settled(listing.root)) {
    moved = true;
    compareNames('');
  }
  for (const entry of listing.entries) {
    const abs = join(root, entry.path);
    const st = lstatSync(abs, { bigint: true, throwIfNoEntry: false });
    if (!st || entryType(st) !== entry.type) {
      changed.push(entry.path);
      continue;
    }
    const fp = fingerprintOf(st);
    // A fingerprint recorded in the same clock tick as its entry's last change does not stand for the content.
    const same = sameFingerprint(fp, entry.fp) && settled(entry.fp);
    if (same && !(options.full && entry.type === 'F')) {
      seen.push(entry);
      continue;
    }
    if (!same) moved = true;
    if (entry.type === 'F') {
      rehashed++;
      let sha256: string | null;
      try {
        sha256 = hashFile(abs);
      } catch {
        sha256 = null;
      }
      const exec = isExecutable(Number(st.mode));
      if (sha256 !== entry.sha256 || exec !== entry.exec || Number(st.size) !== entry.size) changed.push(entry.path);
      else seen.push({ ...entry, fp });
    } else if (entry.type === 'L') {
      if (readTarget(abs) !== entry.target) changed.push(entry.path);
      else seen.push({ ...entry, fp });
    } else {
      compareNames(entry.path);
      seen.push({ ...entry, fp });
    }
  }
  changed.sort();
  const ok = changed.length === 0;
  return {
    ok,
    changed: [...new Set(changed)],
    rehashed,
    refreshed: ok && moved ? { digest: listing.digest, recordedAtMs, root: rootFp, entries: seen } : null,
  };
}

/**
 * A fingerprint as a number `lstat` reports it: `dev`, `ino` and `size` as doubles, the times as Node's milliseconds
 * (`sec * 1e3 + nsec / 1e6`, computed here from the recorded nanoseconds exactly as Node computes them).
 */
interface NumberFingerprint {
  dev: number;
  ino: number;
  mode: number;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
}

/** A listing's entries as absolute paths and number fingerprints, made once per listing and root. */
interface Compiled {
  root: string;
  paths: string[];
  expected: NumberFingerprint[];
  /** Some fingerprint was recorded too soon after its entry changed to stand for it: compare by content. */
  racy: boolean;
}
const compiledListings = new WeakMap<TreeListing, Compiled>();

const NS_PER_SEC = 1_000_000_000n;
/** Node's `Stats` milliseconds of a time recorded in nanoseconds. */
const millisOf = (ns: string) => {
  const n = BigInt(ns);
  return Number(n / NS_PER_SEC) * 1e3 + Number(n % NS_PER_SEC) / 1e6;
};

const asNumbers = (fp: Fingerprint): NumberFingerprint => ({
  dev: Number(fp.dev),
  ino: Number(fp.ino),
  mode: fp.mode,
  size: Number(fp.size),
  mtimeMs: millisOf(fp.mtimeNs),
  ctimeMs: millisOf(fp.ctimeNs),
});

/**
 * The per-run fast path: whether the root and every recorded entry still have their recorded fingerprints — one
 * `lstat` each and number compares, no strings built (the check's whole cost when nothing changed). Number stats
 * rather than bigint ones: Node builds them ~10 % faster, and what they lose cannot hide a change — a change sets
 * the ctime to now, far from a recorded ctime that had settled before the recording (`racy`), and any entry that
 * differs here is compared exactly (bigint fingerprints, then content) by {@link checkTree}'s slow path.
 */
export function fingerprintsUnmoved(root: string, listing: TreeListing): boolean {
  let compiled = compiledListings.get(listing);
  if (compiled?.root !== root) {
    compiled = {
      root,
      paths: [root, ...listing.entries.map((e) => join(root, e.path))],
      expected: [asNumbers(listing.root), ...listing.entries.map((e) => asNumbers(e.fp))],
      racy: [listing.root, ...listing.entries.map((e) => e.fp)].some(
        (fp) => !settledBefore(BigInt(fp.ctimeNs), listing.recordedAtMs),
      ),
    };
    compiledListings.set(listing, compiled);
  }
  const { paths, expected, racy } = compiled;
  if (racy) return false;
  for (let i = 0; i < paths.length; i++) {
    const st = lstatSync(paths[i]!, { throwIfNoEntry: false });
    const e = expected[i]!;
    if (
      st === undefined ||
      st.ctimeMs !== e.ctimeMs ||
      st.ino !== e.ino ||
      st.mtimeMs !== e.mtimeMs ||
      st.size !== e.size ||
      st.mode !== e.mode ||
      st.dev !== e.dev
    )
      return false;
  }
  return true;
}

/** A link's target, or null if it is no longer a link (replaced since its `lstat`). */
function readTarget(abs: string): string | null {
  try {
    return readlinkSync(abs, 'utf8');
  } catch {
    return null;
  }
}

/** Each recorded folder's entry names ('' is the root). */
function recordedChildren(listing: TreeListing): Map<string, string[]> {
  const map = new Map<string, string[]>();
  for (const { path } of listing.entries) {
    const slash = path.lastIndexOf('/');
    const dir = slash < 0 ? '' : path.slice(0, slash);
    const names = map.get(dir) ?? [];
    names.push(path.slice(slash + 1));
    map.set(dir, names);
  }
  return map;
}
