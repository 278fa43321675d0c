/**
 * The installed runner packages as the admin sees and changes them (`paddock runners list|show|remove|verify`):
 * each version with the bindings that use it, removal that refuses while one does, and the whole re-hash.
 */
import type { Binding } from '../bindings/schema.js';
import type { HostConfig } from '../config/hostConfig.js';
import { HostError } from '../errors.js';
import { refused } from '../packages/install.js';
import { hostCatalog, packageDir } from '../packages/installedRunners.js';
import type { RunnerPermissions } from '../packages/permissions.js';
import { removeSealedTree } from '../packages/removeTree.js';
import { verifyInstalledPackage, type PackageVerdict } from '../packages/verifyInstalled.js';
import { compareVersions } from '../packages/versionOrder.js';
import { findRunner, runnerIdOf, type RunnerCatalog } from '../plugins/catalog.js';
import { ConfigRepo } from '../state/configRepo.js';
import { deleteRunnerPackage, runnerPackages, type RunnerPackageRow } from '../state/runnerPackages.js';
import type { Store } from '../state/store.js';
import { setBindingEnabled } from './bindings.js';
import { validationContext } from './config.js';

/** One installed version as `runners list --json` / `runners show` report it. */
export interface PackageSummary extends Omit<RunnerPackageRow, 'permissions'> {
  permissions: RunnerPermissions;
  /** The newest installed version of its id (the one a binding naming the bare id runs). */
  newest: boolean;
  /** Bindings whose runner reference resolves to this version, enabled or not. */
  bindings: { id: string; enabled: boolean }[];
}

/** The bindings (any tenant) whose runner reference resolves to installed version `id@version` in `catalog`. */
function bindingsUsing(store: Store, catalog: RunnerCatalog, id: string, version: string): Binding[] {
  return new ConfigRepo(store)
    .list<Binding>('binding')
    .map((b) => b.spec)
    .filter((b) => runnerIdOf(b.runner) === id && findRunner(catalog, b.runner)?.package?.version === version);
}

/** Every installed version (of `runnerId`, when given), newest first per id, with the bindings that use it. */
export function packageSummaries(store: Store, config: HostConfig, runnerId?: string): PackageSummary[] {
  const catalog = hostCatalog(config, store);
  return runnerPackages(store, runnerId)
    .sort((a, b) =>
      a.runnerId === b.runnerId ? compareVersions(b.version, a.version) : a.runnerId < b.runnerId ? -1 : 1,
    )
    .map((p) => ({
      ...p,
      permissions: p.permissions as RunnerPermissions,
      newest: catalog.runners.get(p.runnerId)?.package?.version === p.version,
      bindings: bindingsUsing(store, catalog, p.runnerId, p.version).map((b) => ({ id: b.id, enabled: b.enabled })),
    }));
}

/** `<id>@<version>`, or `<id>` when exactly one version of it is installed: the version meant. */
export function installedVersionOf(store: Store, ref: string): RunnerPackageRow {
  const id = runnerIdOf(ref);
  const versions = runnerPackages(store, id);
  const found = ref.includes('@') ? versions.find((v) => `${id}@${v.version}` === ref) : versions[0];
  if (!found)
    throw new HostError(
      'NOT_FOUND',
      `no installed runner package ${ref} (paddock runners list shows what is installed)`,
    );
  if (!ref.includes('@') && versions.length > 1)
    throw new HostError(
      'INVALID_INPUT',
      `${versions.length} versions of ${id} are installed (${versions.map((v) => v.version).join(', ')}): ` +
        'name one as ' +
        `${id}@<version>`,
    );
  return found;
}

/** The newest installed version of runner `id` (what `update` compares with and a bare id runs). */
export function newestInstalled(store: Store, id: string): RunnerPackageRow {
  const newest = runnerPackages(store, id).sort((a, b) => compareVersions(b.version, a.version))[0];
  if (!newest)
    throw new HostError('NOT_FOUND', `no installed runner package ${id} (paddock runners install installs one)`);
  return newest;
}

/** What removing a version did. */
export interface RemoveReport {
  runner: string;
  version: string;
  disabledBindings: string[];
}

/**
 * Remove installed version `ref`: refused while an enabled binding resolves to it (naming them) unless
 * `disableBindings`, which disables each (audited, as `bindings disable` does) first. The row and the audit record
 * go in one transaction, then the folder.
 */
export function removeRunnerPackage(
  store: Store,
  config: HostConfig,
  ref: string,
  options: { by: string; disableBindings?: boolean },
): RemoveReport {
  const row = installedVersionOf(store, ref);
  const catalog = hostCatalog(config, store);
  const using = bindingsUsing(store, catalog, row.runnerId, row.version).filter((b) => b.enabled);
  if (using.length > 0 && options.disableBindings !== true)
    throw refused(
      'in_use',
      `${row.runnerId}@${row.version} is used by binding(s) ${using.map((b) => `"${b.id}"`).join(', ')}: disable ` +
        'them first, or pass --disable-bindings to disable them and remove it',
      { bindings: using.map((b) => b.id) },
    );
  for (const b of using)
    setBindingEnabled(store, validationContext(config, undefined, store), b.id, false, { by: options.by });
  store.transaction(() => {
    deleteRunnerPackage(store, row.runnerId, row.version);
    store.audit.append({
      type: 'runner.removed',
      actor: options.by,
      data: {
        runner: row.runnerId,
        version: row.version,
        digest: row.digest,
        disabledBindings: using.map((b) => b.id),
      },
    });
  });
  removeSealedTree(packageDir(config.dataDir, row.runnerId, row.version));
  return { runner: row.runnerId, version: row.version, disabledBindings: using.map((b) => b.id) };
}

/** Re-hash every file of each installed version (of `ref`, when given): `paddock runners verify`. */
export function verifyRunnerPackages(
  store: Store,
  config: HostConfig,
  ref: string | undefined,
  by: string,
): (PackageVerdict & { runner: string; version: string })[] {
  const rows = ref === undefined ? runnerPackages(store) : [installedVersionOf(store, ref)];
  return rows.map((r) => ({
    runner: r.runnerId,
    version: r.version,
    ...verifyInstalledPackage(store, config.dataDir, r.runnerId, r.version, { full: true, by }),
  }));
}
