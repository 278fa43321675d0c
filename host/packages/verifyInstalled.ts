/**
 * The integrity check of an installed runner package before each of its runs (docs/runner-packages.md, "Verified at
 * every run"): the stored listing against the folder, cheaply by fingerprints, fully on a schedule.
 */
import {
  markRunnerPackageTampered,
  refreshRunnerPackageListing,
  runnerPackage,
  runnerPackageListing,
  runnerPackageState,
} from '../state/runnerPackages.js';
import type { Store } from '../state/store.js';
import { packageDir } from './installedRunners.js';
import type { TreeListing } from './treeDigest.js';
import { checkTree } from './verifyTree.js';

/** How long a version goes without a whole re-hash: the next run after this re-hashes every file. */
export const FULL_CHECK_MS = 24 * 3600 * 1000;

/** At most this many changed paths are kept and audited (the first ones, sorted). */
const MAX_CHANGED = 20;

/** What {@link verifyInstalledPackage} found. */
export type PackageVerdict =
  | { ok: true; full: boolean; rehashed: number }
  | {
      ok: false;
      /** The changed paths (at most 20): what this check found, or what the check that marked it found. */
      changed: string[];
      /** The version was already marked tampered (this check did not look at the folder again). */
      already: boolean;
    };

/** Parsed listings while the stored revision is the one parsed (a listing of 1,000 files is ~0.3 MB of JSON). */
const listings = new Map<string, { rev: number; listing: TreeListing }>();

function listingOf(store: Store, runnerId: string, version: string, rev: number): TreeListing {
  const key = `${runnerId}@${version}`;
  const cached = listings.get(key);
  if (cached && cached.rev === rev) return cached.listing;
  const stored = runnerPackageListing(store, runnerId, version);
  if (!stored) throw new Error(`${key} is not installed`);
  const listing = JSON.parse(stored.listing) as TreeListing;
  listings.set(key, { rev: stored.listingRev, listing });
  return listing;
}

/**
 * Check installed version `runnerId@version` against its record. A version already marked tampered is refused
 * without looking again (until it is installed again or removed). A change marks it tampered and audits
 * `runner.tampered` (once, with the expected digest and the changed paths) in one transaction; fingerprints that
 * moved without a change, and the time of a whole re-hash, are stored back. `full` (or a last whole re-hash older
 * than {@link FULL_CHECK_MS}) re-hashes every file.
 */
export function verifyInstalledPackage(
  store: Store,
  dataDir: string,
  runnerId: string,
  version: string,
  options: { full?: boolean; now?: number; by?: string } = {},
): PackageVerdict {
  const state = runnerPackageState(store, runnerId, version);
  if (!state) throw new Error(`${runnerId}@${version} is not installed`);
  if (state.status === 'tampered')
    return { ok: false, changed: runnerPackage(store, runnerId, version)?.tampered ?? [], already: true };
  const now = options.now ?? Date.now();
  const full = options.full === true || now - Date.parse(state.verifiedAt) >= FULL_CHECK_MS;
  const check = checkTree(
    packageDir(dataDir, runnerId, version),
    listingOf(store, runnerId, version, state.listingRev),
    {
      full,
    },
  );
  if (!check.ok) {
    const changed = check.changed.slice(0, MAX_CHANGED);
    store.transaction(() => {
      if (markRunnerPackageTampered(store, runnerId, version, changed))
        store.audit.append({
          type: 'runner.tampered',
          actor: options.by ?? 'host',
          data: {
            runner: runnerId,
            version,
            digest: state.digest,
            changed,
            changedCount: check.changed.length,
            full,
          },
        });
    });
    return { ok: false, changed, already: false };
  }
  if (check.refreshed || full) {
    store.transaction(() =>
      refreshRunnerPackageListing(store, runnerId, version, {
        ...(check.refreshed ? { listing: JSON.stringify(check.refreshed) } : {}),
        ...(full ? { verifiedAt: new Date(now).toISOString() } : {}),
      }),
    );
    if (check.refreshed)
      listings.set(`${runnerId}@${version}`, { rev: state.listingRev + 1, listing: check.refreshed });
  }
  return { ok: true, full, rehashed: check.rehashed };
}
