/**
 * `paddock runners install` and `update` (docs/runner-packages.md, section 4): fetch a runner package with npm and
 * no script run, check its tree, manifest and identity, review what it asks for, then seal it read-only and record
 * it with its digest in the store and the audit — in that order, each step named below.
 */
import { randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readdirSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import type { HostConfig } from '../config/hostConfig.js';
import { HostError } from '../errors.js';
import { checkedManifest, discoverRunners } from '../plugins/catalog.js';
import type { RunnerManifestFile } from '../plugins/manifest.js';
import { insertRunnerPackage, runnerPackage, runnerPackages, type RunnerPackageRow } from '../state/runnerPackages.js';
import type { Store } from '../state/store.js';
import { readBoundedFile } from '../util/readBoundedFile.js';
import { packageDir, packagesDir } from './installedRunners.js';
import { checkPackageIdentity } from './packageIdentity.js';
import { diffPermissions, permissionsOf, type PermissionsDiff, type RunnerPermissions } from './permissions.js';
import { removeSealedTree } from './removeTree.js';
import { sealTree, treeProblems } from './sealTree.js';
import { checkSignatures, type SignatureVerdict } from './signatures.js';
import { classifySpec, stagePackage, type StagedPackage } from './stage.js';
import { readTree } from './treeDigest.js';
import { compareVersions, isPackageVersion } from './versionOrder.js';

/** What the admin reviews before a package is installed (printed by the CLI, returned with `--json`). */
export interface InstallReview {
  runnerId: string;
  version: string;
  packageName: string;
  source: StagedPackage['source'];
  spec: string;
  integrity: string | null;
  signatures: SignatureVerdict;
  /** Packages whose install scripts npm saw and did not run. */
  skippedScripts: string[];
  permissions: RunnerPermissions;
  /** How the runner starts (its manifest's entry, as a command line: `node index.ts`, `python3 {runnerDir}/r.py`). */
  entry: string;
  /** Against the newest installed version of the same id, when there is one (an update). */
  diff: (PermissionsDiff & { against: string }) | null;
  /** Whether this install needs the admin's acceptance: a new runner, a widening, or a repair. */
  needsAcceptance: boolean;
  /** The same version is installed and tampered: this install replaces it. */
  repair: boolean;
  /**
   * A built-in runner has this id (e.g. a packed built-in runner installed as a package): a binding naming the bare id
   * keeps running the built-in one; `<id>@<version>` runs this package.
   */
  builtinId: boolean;
}

/** How to install. */
export interface InstallOptions {
  /** The admin accepted the permissions (`--accept`). */
  accept?: boolean;
  /** Ask the admin when `accept` is not given (an interactive yes on a terminal); answers whether accepted. */
  confirm?: (review: InstallReview) => Promise<boolean>;
  /** `--allow-native-build`: run the package's install scripts (`npm rebuild`) when its manifest asks (audited). */
  allowNativeBuild?: boolean;
  /** Who installs (the audit's actor). */
  by: string;
  /** Told each step as it starts (the CLI shows it as progress). */
  progress?: (step: string) => void;
  /** `update`: the package must be a version of this runner. */
  updateOf?: string;
  npm?: string;
}

/** What an install did. */
export interface InstallResult {
  status: 'installed' | 'repaired' | 'unchanged';
  review: InstallReview;
  digest: string;
  dir: string;
}

/** Install `spec` (an npm spec, a folder or a tarball) into `<data>/runners/<id>@<version>/`. */
export async function installRunnerPackage(
  store: Store,
  config: Pick<HostConfig, 'dataDir'>,
  spec: string,
  options: InstallOptions,
): Promise<InstallResult> {
  const step = options.progress ?? (() => undefined);
  const incoming = makeIncomingDir(config.dataDir);
  let final: string | undefined;
  try {
    step(`fetching ${spec} with npm (no script runs)`);
    const staged = await stagePackage(spec, incoming, { npm: options.npm });
    step('checking the package tree, manifest and name');
    const problems = [...treeProblems(readTree(incoming)), ...dependencyProblems(staged)];
    if (problems.length > 0) throw refused('invalid', `the package is refused: ${problems.join('; ')}`);
    const { manifest, packageName } = checkIdentity(staged, options.updateOf);
    const version = manifest.version;
    if (staged.source === 'registry') step('checking registry signatures with npm');
    const signatures =
      staged.source === 'registry'
        ? await checkSignatures(incoming, packageName, options.npm)
        : `not applicable (${staged.source})`;
    const review = reviewOf(store, staged, manifest, spec, signatures);
    const digest = readTree(incoming).digest;
    const installed = runnerPackage(store, review.runnerId, version);
    if (installed && installed.status === 'ok') {
      if (installed.digest === digest)
        return { status: 'unchanged', review, digest, dir: packageDir(config.dataDir, review.runnerId, version) };
      throw refused(
        'version_conflict',
        `${review.runnerId}@${version} is already installed with another digest (${installed.digest}); a version ` +
          'names one tree: publish a new version',
      );
    }
    await accepted(review, options);
    if (review.permissions.nativeBuild) await nativeBuild(store, incoming, review, options);
    step('sealing the package read-only and recording it');
    final = packageDir(config.dataDir, review.runnerId, version);
    moveIntoPlace(incoming, final);
    const listing = sealTree(final);
    store.transaction(() => {
      insertRunnerPackage(store, {
        runnerId: review.runnerId,
        version,
        source: staged.source,
        spec: review.spec,
        packageName,
        integrity: staged.integrity,
        digest: listing.digest,
        signatures,
        permissions: review.permissions,
        skippedScripts: staged.skippedInstallScripts,
        nativeBuild: review.permissions.nativeBuild,
        listing: JSON.stringify(listing),
        installedBy: options.by,
        installedAt: new Date().toISOString(),
      });
      store.audit.append({
        type: review.repair ? 'runner.repaired' : 'runner.installed',
        actor: options.by,
        data: {
          runner: review.runnerId,
          version,
          package: packageName,
          source: staged.source,
          spec: review.spec,
          integrity: staged.integrity,
          digest: listing.digest,
          signatures,
          skippedScripts: staged.skippedInstallScripts,
          permissions: review.permissions,
          ...(review.diff ? { diff: review.diff } : {}),
        },
      });
    });
    return { status: review.repair ? 'repaired' : 'installed', review, digest: listing.digest, dir: final };
  } catch (error) {
    // Nothing half-installed stays: the staging folder, and a folder moved into place but not recorded.
    if (final !== undefined && !recorded(store, final, config.dataDir)) removeSealedTree(final);
    throw error;
  } finally {
    removeSealedTree(incoming);
  }
}

/** A refusal of an install, update or remove, with its reason code. */
export function refused(reason: string, message: string, data: Record<string, unknown> = {}): HostError {
  return new HostError('PACKAGE_REFUSED', message, { reason, ...data });
}

/** A fresh private staging folder under `<data>/runners/.incoming/` (swept by {@link sweepIncoming}). */
function makeIncomingDir(dataDir: string): string {
  const dir = join(packagesDir(dataDir), '.incoming', randomBytes(8).toString('hex'));
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

/** How old a staging folder must be to be swept: far longer than any install, so a concurrent one is never swept. */
const STALE_INCOMING_MS = 3600 * 1000;

/** Remove what installs that crashed left in `<data>/runners/.incoming/` (folders older than an hour). */
export function sweepIncoming(dataDir: string, now = Date.now()): void {
  const base = join(packagesDir(dataDir), '.incoming');
  if (!existsSync(base)) return;
  for (const name of readdirSync(base)) {
    const dir = join(base, name);
    if (now - lstatSync(dir).mtimeMs > STALE_INCOMING_MS) removeSealedTree(dir);
  }
}

/**
 * Dependencies must come from the registry: a `file:`, `link:` or git dependency of a package would copy a folder or
 * tarball of the installing host (or a repository) into the package, where its runner reads it — npm resolves such
 * specs relative to wherever the package was unpacked. The package itself may come from a folder or tarball.
 */
function dependencyProblems(staged: StagedPackage): string[] {
  const lock = JSON.parse(
    readBoundedFile(join(staged.dir, 'package-lock.json'), { maxBytes: 64 << 20 }).toString(),
  ) as {
    packages?: Record<string, { resolved?: unknown; link?: unknown }>;
  };
  const own = `node_modules/${staged.name}`;
  return Object.entries(lock.packages ?? {})
    .filter(([path]) => path !== '' && path !== own)
    .filter(([, p]) => p.link === true || (typeof p.resolved === 'string' && !/^https?:\/\//.test(p.resolved)))
    .map(
      ([path, p]) =>
        `dependency ${path.replace(/^.*node_modules\//, '')} comes from ${JSON.stringify(p.resolved ?? 'a link')}: ` +
        'only registry dependencies are installed',
    );
}

/**
 * The staged package's manifest, checked against its package.json: the conventions of packageIdentity.ts, the
 * version npm installed, a version usable as a folder name, and (an update) the id.
 */
function checkIdentity(
  staged: StagedPackage,
  updateOf: string | undefined,
): { manifest: RunnerManifestFile; packageName: string } {
  if (!existsSync(join(staged.runnerDir, 'runner.json')))
    throw refused('invalid', `${staged.name}@${staged.version} has no runner.json at its root: not a runner package`);
  let manifest: RunnerManifestFile;
  try {
    manifest = checkedManifest(staged.runnerDir).manifest;
  } catch (error) {
    throw refused('invalid', `the package's ${(error as Error).message.replace(staged.runnerDir + '/', '')}`);
  }
  let pkg: unknown;
  try {
    pkg = JSON.parse(readBoundedFile(join(staged.runnerDir, 'package.json'), { maxBytes: 1024 * 1024 }).toString());
  } catch (error) {
    throw refused('invalid', `the package's package.json cannot be read: ${(error as Error).message}`);
  }
  const checked = checkPackageIdentity(pkg, manifest);
  if (!checked.ok)
    throw refused(
      'invalid',
      `the package is refused: ${checked.problems.map((p) => `${p.file}: field ${p.field}: ${p.message}`).join('; ')}`,
      { problems: checked.problems },
    );
  const problems: string[] = [];
  if (checked.identity.packageName !== staged.name)
    problems.push(
      `package.json name ${JSON.stringify(checked.identity.packageName)} is not what npm installed (${staged.name})`,
    );
  if (manifest.version !== staged.version)
    problems.push(`runner.json version ${manifest.version} is not the version npm installed (${staged.version})`);
  if (!isPackageVersion(manifest.version))
    problems.push(`version ${JSON.stringify(manifest.version)} is not a semantic version (1.2.3)`);
  if (updateOf !== undefined && manifest.id !== updateOf)
    problems.push(`the package is runner "${manifest.id}", not "${updateOf}"`);
  if (problems.length > 0) throw refused('invalid', `the package is refused: ${problems.join('; ')}`);
  return { manifest, packageName: staged.name };
}

/** What the admin reviews: the permissions, and the diff against the newest other installed version of the id. */
function reviewOf(
  store: Store,
  staged: StagedPackage,
  manifest: RunnerManifestFile,
  spec: string,
  signatures: SignatureVerdict,
): InstallReview {
  const permissions = permissionsOf(manifest);
  const same = runnerPackage(store, manifest.id, manifest.version);
  const newest = newestOther(runnerPackages(store, manifest.id), manifest.version);
  const diff = newest
    ? { against: newest.version, ...diffPermissions(newest.permissions as RunnerPermissions, permissions) }
    : null;
  const repair = same?.status === 'tampered';
  return {
    runnerId: manifest.id,
    version: manifest.version,
    packageName: staged.name,
    source: staged.source,
    // A folder or tarball is recorded by its absolute path (what `update` installs from again).
    spec: classifySpec(spec).npmSpec,
    integrity: staged.integrity,
    signatures,
    skippedScripts: staged.skippedInstallScripts,
    permissions,
    entry:
      'node' in manifest.entry
        ? `node ${manifest.entry.node}`
        : [manifest.entry.command, ...manifest.entry.args].map((w) => JSON.stringify(w)).join(' '),
    diff,
    needsAcceptance: repair || diff === null || diff.widened.length > 0,
    repair,
    builtinId: discoverRunners([]).runners.has(manifest.id),
  };
}

/** The newest installed version of a runner other than `version`. */
function newestOther(rows: RunnerPackageRow[], version: string): RunnerPackageRow | undefined {
  return rows.filter((r) => r.version !== version).sort((a, b) => compareVersions(b.version, a.version))[0];
}

/** Throws unless the review needs no acceptance, `--accept` was given, or the admin said yes. */
async function accepted(review: InstallReview, options: InstallOptions): Promise<void> {
  if (!review.needsAcceptance || options.accept === true) return;
  if (options.confirm && (await options.confirm(review))) return;
  const what = review.diff
    ? `asks for more than ${review.runnerId}@${review.diff.against} (${review.diff.widened.join('; ')})`
    : review.repair
      ? 'replaces a tampered install'
      : 'is a new runner';
  throw refused(
    'not_accepted',
    `${review.runnerId}@${review.version} ${what}: review what it asks for and pass --accept to install it`,
    { review },
  );
}

/** `--allow-native-build`: audited first (who allowed which package), then `npm rebuild` runs its scripts. */
async function nativeBuild(store: Store, dir: string, review: InstallReview, options: InstallOptions): Promise<void> {
  if (options.allowNativeBuild !== true)
    throw refused(
      'native_build',
      `${review.runnerId}@${review.version} needs a native build (its manifest's install.nativeBuild): its install ` +
        'scripts would run on this host as the host user; pass --allow-native-build to allow it (audited)',
    );
  store.transaction(() =>
    store.audit.append({
      type: 'runner.native_build',
      actor: options.by,
      data: { runner: review.runnerId, version: review.version, scripts: review.skippedScripts },
    }),
  );
  options.progress?.('running the package install scripts (npm rebuild; allowed by --allow-native-build)');
  await new Promise<void>((done, fail) =>
    execFile(
      options.npm ?? 'npm',
      ['rebuild', '--foreground-scripts', '--no-update-notifier'],
      { cwd: dir },
      (e, _o, err) =>
        e
          ? fail(refused('native_build', `npm rebuild failed: ${err.trim().split('\n').slice(-6).join('\n')}`))
          : done(),
    ),
  );
}

/** Move the staged folder to its final place, replacing a folder left there without a row or a tampered one. */
function moveIntoPlace(incoming: string, final: string): void {
  if (existsSync(final)) {
    const old = `${incoming}.replaced`;
    renameSync(final, old);
    removeSealedTree(old);
  }
  renameSync(incoming, final);
  mkdirSync(incoming, { mode: 0o700 });
}

/** Whether `final` is the folder of a version the store records with its current digest (kept on failure). */
function recorded(store: Store, final: string, dataDir: string): boolean {
  return runnerPackages(store).some((r) => packageDir(dataDir, r.runnerId, r.version) === final && r.status === 'ok');
}
