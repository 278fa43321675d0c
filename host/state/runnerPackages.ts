/** The `runner_packages` table: each installed version of a runner package (docs/runner-packages.md, "Store"). */
import { dbOf, type Store } from './store.js';

/** Where a package came from. */
export type PackageSourceKind = 'registry' | 'folder' | 'tarball';

/** One installed version, as its row holds it (the listing as stored JSON text: parsed by who checks it). */
export interface RunnerPackageRow {
  runnerId: string;
  version: string;
  source: PackageSourceKind;
  spec: string;
  packageName: string;
  integrity: string | null;
  digest: string;
  signatures: string;
  /** The permissions the admin accepted (host/packages/permissions.ts), parsed. */
  permissions: unknown;
  skippedScripts: string[];
  nativeBuild: boolean;
  listingRev: number;
  status: 'ok' | 'tampered';
  /** The changed paths the check that found the tree changed named (empty while ok). */
  tampered: string[];
  installedBy: string;
  installedAt: string;
  verifiedAt: string;
}

/** What {@link insertRunnerPackage} records. */
export type NewRunnerPackage = Omit<RunnerPackageRow, 'listingRev' | 'status' | 'tampered' | 'verifiedAt'> & {
  listing: string;
};

const COLUMNS =
  'runner_id AS runnerId, version, source, spec, package_name AS packageName, integrity, digest, signatures, ' +
  'permissions, skipped_scripts AS skippedScripts, native_build AS nativeBuild, listing_rev AS listingRev, status, ' +
  'tampered, installed_by AS installedBy, installed_at AS installedAt, verified_at AS verifiedAt';

type RawRow = Omit<RunnerPackageRow, 'permissions' | 'skippedScripts' | 'nativeBuild' | 'tampered'> & {
  permissions: string;
  skippedScripts: string;
  nativeBuild: number;
  tampered: string | null;
};

function parsed(row: RawRow): RunnerPackageRow {
  return {
    ...row,
    permissions: JSON.parse(row.permissions) as unknown,
    skippedScripts: JSON.parse(row.skippedScripts) as string[],
    nativeBuild: row.nativeBuild === 1,
    tampered: row.tampered === null ? [] : (JSON.parse(row.tampered) as string[]),
  };
}

/** Every installed version, by runner id then install time. */
export function runnerPackages(store: Store, runnerId?: string): RunnerPackageRow[] {
  const db = dbOf(store);
  const rows = (
    runnerId === undefined
      ? db.prepare(`SELECT ${COLUMNS} FROM runner_packages ORDER BY runner_id, installed_at`).all()
      : db.prepare(`SELECT ${COLUMNS} FROM runner_packages WHERE runner_id = ? ORDER BY installed_at`).all(runnerId)
  ) as RawRow[];
  return rows.map(parsed);
}

/** One installed version, or undefined. */
export function runnerPackage(store: Store, runnerId: string, version: string): RunnerPackageRow | undefined {
  const row = dbOf(store)
    .prepare(`SELECT ${COLUMNS} FROM runner_packages WHERE runner_id = ? AND version = ?`)
    .get(runnerId, version) as RawRow | undefined;
  return row && parsed(row);
}

/** The stored listing of one version and its revision (what the per-run check compares the folder with). */
export function runnerPackageListing(
  store: Store,
  runnerId: string,
  version: string,
): { listing: string; listingRev: number } | undefined {
  return dbOf(store)
    .prepare('SELECT listing, listing_rev AS listingRev FROM runner_packages WHERE runner_id = ? AND version = ?')
    .get(runnerId, version) as { listing: string; listingRev: number } | undefined;
}

/** What the per-run check reads first: status, revision and last full check; small, read at every run. */
export function runnerPackageState(
  store: Store,
  runnerId: string,
  version: string,
): { status: 'ok' | 'tampered'; listingRev: number; verifiedAt: string; digest: string } | undefined {
  return dbOf(store)
    .prepare(
      'SELECT status, listing_rev AS listingRev, verified_at AS verifiedAt, digest FROM runner_packages ' +
        'WHERE runner_id = ? AND version = ?',
    )
    .get(runnerId, version) as
    { status: 'ok' | 'tampered'; listingRev: number; verifiedAt: string; digest: string } | undefined;
}

/** Record an installed version (replacing a row of the same version: a repair); the caller audits it. */
export function insertRunnerPackage(store: Store, p: NewRunnerPackage, at = new Date().toISOString()): void {
  dbOf(store)
    .prepare(
      // One upsert for both stores (SQLite's INSERT OR REPLACE has no PostgreSQL twin): every column replaced.
      'INSERT INTO runner_packages (runner_id, version, source, spec, package_name, integrity, digest, ' +
        'signatures, permissions, skipped_scripts, native_build, listing, listing_rev, status, tampered, ' +
        'installed_by, installed_at, verified_at) ' +
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 'ok', NULL, ?, ?, ?) " +
        'ON CONFLICT (runner_id, version) DO UPDATE SET source = excluded.source, spec = excluded.spec, ' +
        'package_name = excluded.package_name, integrity = excluded.integrity, digest = excluded.digest, ' +
        'signatures = excluded.signatures, permissions = excluded.permissions, ' +
        'skipped_scripts = excluded.skipped_scripts, native_build = excluded.native_build, ' +
        'listing = excluded.listing, listing_rev = excluded.listing_rev, status = excluded.status, ' +
        'tampered = excluded.tampered, installed_by = excluded.installed_by, installed_at = excluded.installed_at, ' +
        'verified_at = excluded.verified_at',
    )
    .run(
      p.runnerId,
      p.version,
      p.source,
      p.spec,
      p.packageName,
      p.integrity,
      p.digest,
      p.signatures,
      JSON.stringify(p.permissions),
      JSON.stringify(p.skippedScripts),
      p.nativeBuild ? 1 : 0,
      p.listing,
      p.installedBy,
      p.installedAt,
      at,
    );
}

/**
 * Store a listing whose fingerprints moved without a change (a `touch`, or the first check after install), and when
 * `full`, the time of a whole re-hash; answers the new revision.
 */
export function refreshRunnerPackageListing(
  store: Store,
  runnerId: string,
  version: string,
  update: { listing?: string; verifiedAt?: string },
): void {
  dbOf(store)
    .prepare(
      // CASE, not `+ (? IS NOT NULL)`: PostgreSQL adds no boolean to a number; the CAST types the parameter for it.
      'UPDATE runner_packages SET listing = coalesce(?, listing), ' +
        'listing_rev = listing_rev + CASE WHEN CAST(? AS TEXT) IS NULL THEN 0 ELSE 1 END, ' +
        'verified_at = coalesce(?, verified_at) WHERE runner_id = ? AND version = ?',
    )
    .run(update.listing ?? null, update.listing ?? null, update.verifiedAt ?? null, runnerId, version);
}

/** Mark a version tampered, naming what changed; the caller audits it. Answers whether it was ok before. */
export function markRunnerPackageTampered(
  store: Store,
  runnerId: string,
  version: string,
  changed: readonly string[],
): boolean {
  return (
    dbOf(store)
      .prepare(
        "UPDATE runner_packages SET status = 'tampered', tampered = ? WHERE runner_id = ? AND version = ? " +
          "AND status = 'ok'",
      )
      .run(JSON.stringify(changed), runnerId, version).changes > 0
  );
}

/** Forget an installed version; the caller removes its folder and audits it. */
export function deleteRunnerPackage(store: Store, runnerId: string, version: string): boolean {
  return (
    dbOf(store).prepare('DELETE FROM runner_packages WHERE runner_id = ? AND version = ?').run(runnerId, version)
      .changes > 0
  );
}
