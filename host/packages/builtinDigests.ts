import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { z } from 'zod';
import { PACKAGE_ROOT } from '../config/packageRoot.js';
import { HostError } from '../errors.js';
import { BUILTIN_RUNNERS_DIR } from '../plugins/resolveRunner.js';
import { readTree, type Fingerprint, type TreeEntry, type TreeListing } from './treeDigest.js';
import { checkTree } from './verifyTree.js';

/** Where the build records the built-in runners' trees (scripts/build.mjs; docs/runner-packages.md §3). */
export const BUILTIN_DIGESTS_FILE = join(PACKAGE_ROOT, 'dist', 'runner-digests.json');

/** A tree entry as the build records it: what the digest covers, without the stat fingerprint of one machine. */
export type RecordedEntry = DistributiveOmit<TreeEntry, 'fp'>;
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** One built-in runner's record: its manifest id, its folder's digest and listing. */
export interface BuiltinRecord {
  id: string;
  digest: string;
  entries: RecordedEntry[];
}

/** `dist/runner-digests.json`: each built-in runner folder (by folder name) as the build saw it. */
export interface BuiltinDigests {
  format: 1;
  runners: Record<string, BuiltinRecord>;
}

const EntrySchema = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('F'),
    path: z.string(),
    exec: z.boolean(),
    size: z.int().nonnegative(),
    sha256: z.string(),
  }),
  z.strictObject({ type: z.literal('L'), path: z.string(), target: z.string() }),
  z.strictObject({ type: z.literal('D'), path: z.string() }),
]);
const DigestsSchema = z.strictObject({
  format: z.literal(1),
  runners: z.record(z.string(), z.strictObject({ id: z.string(), digest: z.string(), entries: z.array(EntrySchema) })),
});

/**
 * The record of every runner folder (one holding runner.json) in `runnersDir`: its id, tree digest and listing
 * (host/packages/treeDigest.ts `readTree`, fingerprints dropped). The build writes it; {@link BuiltinVerifier} checks
 * against it.
 */
export function builtinDigestsOf(runnersDir: string): BuiltinDigests {
  const runners: Record<string, BuiltinRecord> = {};
  for (const name of readdirSync(runnersDir).sort()) {
    const dir = join(runnersDir, name);
    if (!existsSync(join(dir, 'runner.json'))) continue;
    const { id } = JSON.parse(readFileSync(join(dir, 'runner.json'), 'utf8')) as { id: string };
    const { digest, entries } = readTree(dir);
    runners[name] = { id, digest, entries: entries.map(({ fp: _fp, ...entry }) => entry) };
  }
  return { format: 1, runners };
}

/** What {@link BuiltinVerifier.verify} found for one built-in runner. */
export interface BuiltinCheck {
  /** The runner's folder name under runners/ (its id for every built-in runner). */
  runner: string;
  /** The folder holds exactly what the build recorded. */
  ok: boolean;
  /** The digest the build recorded, or null when it recorded none for this runner (refused). */
  expected: string | null;
  /** Paths that differ from the record (`.`: the folder itself is gone), sorted; empty when ok. */
  changed: string[];
  /** Why it is refused, in words, when not ok. */
  problem?: string;
  /** Files hashed by this check (all of them the first time in a process, then only those whose stat moved). */
  rehashed: number;
}

/**
 * A stat fingerprint no entry has (a real `lstat` never answers inode 0 and mode 0): a recorded listing starts with
 * it, so the first check of a process compares every entry by content and hands back the fingerprints it saw.
 */
const UNSEEN: Fingerprint = { dev: '0', ino: '0', mode: 0, size: '0', mtimeNs: '0', ctimeNs: '0' };

/** A full check of every built-in runner is forced after this long (docs/runner-packages.md §3, fullCheckHours). */
export const BUILTIN_FULL_CHECK_MS = 24 * 3_600_000;

/**
 * Checks built-in runner folders against the build's record (docs/runner-packages.md §3): the first check of a runner
 * in this process compares every file by content (verifyTree.ts `checkTree`); the fingerprints it saw are kept in
 * memory, so later checks are one `lstat` per entry until one moves, and every `fullEveryMs` a check re-hashes all.
 */
export class BuiltinVerifier {
  private digests: BuiltinDigests | null | undefined;
  /** Per runner folder: the listing with this machine's fingerprints, and when its files were last all hashed. */
  private readonly seen = new Map<string, { listing: TreeListing; fullAtMs: number }>();

  constructor(
    private readonly runnersDir: string = BUILTIN_RUNNERS_DIR,
    private readonly digestsFile: string = BUILTIN_DIGESTS_FILE,
    private readonly fullEveryMs: number = BUILTIN_FULL_CHECK_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Check the built-in runner `runner`: its id, its folder name, or its folder's path (which must be a folder of
   * `runnersDir`). `full` re-hashes every file whatever the fingerprints say. A runner the build did not record, or
   * a missing or unreadable record file, is refused (not ok), never passed.
   */
  verify(runner: string, options: { full?: boolean } = {}): BuiltinCheck {
    const digests = this.load();
    const name = this.folderOf(runner, digests);
    const record = digests?.runners[name];
    if (!record) {
      const why = digests
        ? `the build recorded no built-in runner "${name}"`
        : `${this.digestsFile} is missing or malformed`;
      return { runner: name, ok: false, expected: null, changed: [], problem: why, rehashed: 0 };
    }
    const dir = join(this.runnersDir, name);
    const at = this.now();
    const known = this.seen.get(name);
    const full = options.full === true || !known || at - known.fullAtMs >= this.fullEveryMs;
    const listing = known?.listing ?? unseenListing(record);
    const check = checkTree(dir, listing, { full });
    if (!check.ok) {
      this.seen.delete(name);
      const problem = `changed since the build: ${check.changed.slice(0, 20).join(', ')}`;
      return {
        runner: name,
        ok: false,
        expected: record.digest,
        changed: check.changed,
        problem,
        rehashed: check.rehashed,
      };
    }
    this.seen.set(name, { listing: check.refreshed ?? listing, fullAtMs: full ? at : known!.fullAtMs });
    return { runner: name, ok: true, expected: record.digest, changed: [], rehashed: check.rehashed };
  }

  /** The record file, read once per verifier (null when it is missing or not what the build writes). */
  private load(): BuiltinDigests | null {
    if (this.digests !== undefined) return this.digests;
    try {
      this.digests = DigestsSchema.parse(JSON.parse(readFileSync(this.digestsFile, 'utf8'))) as BuiltinDigests;
    } catch {
      this.digests = null;
    }
    return this.digests;
  }

  /** The folder name a runner reference stands for. */
  private folderOf(runner: string, digests: BuiltinDigests | null): string {
    if (isAbsolute(runner) || runner.includes('/')) {
      const dir = resolve(runner);
      if (dirname(dir) !== resolve(this.runnersDir))
        throw new HostError('INVALID_INPUT', `${dir} is not a built-in runner folder (${this.runnersDir}/<name>)`);
      return basename(dir);
    }
    const byId = Object.entries(digests?.runners ?? {}).find(([, r]) => r.id === runner);
    return byId ? byId[0] : runner;
  }
}

/** A record as a listing whose every fingerprint is {@link UNSEEN}: the first check compares all by content. */
function unseenListing(record: BuiltinRecord): TreeListing {
  return {
    digest: record.digest,
    recordedAtMs: 0,
    root: UNSEEN,
    entries: record.entries.map((entry) => ({ ...entry, fp: UNSEEN })),
  };
}

let processVerifier: BuiltinVerifier | undefined;

/**
 * Check a built-in runner (id, folder name or folder path) against `dist/runner-digests.json` with this process's
 * verifier (fingerprints kept in memory for the life of the process). Not ok means refuse its run
 * (`runner_tampered`, docs/runner-packages.md §3).
 */
export function verifyBuiltinRunner(runner: string, options: { full?: boolean } = {}): BuiltinCheck {
  processVerifier ??= new BuiltinVerifier();
  return processVerifier.verify(runner, options);
}
