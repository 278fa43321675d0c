/** Where installed runner packages live on disk, and the store's installed versions as catalog entries. */
import { join } from 'node:path';
import type { HostConfig } from '../config/hostConfig.js';
import {
  discoverRunners,
  type DiscoverOptions,
  type InstalledRunnerRef,
  type RunnerCatalog,
} from '../plugins/catalog.js';
import { runnerPackages } from '../state/runnerPackages.js';
import type { Store } from '../state/store.js';
import { compareVersions } from './versionOrder.js';

/** The folder of every installed package version: `<data>/runners/`. */
export function packagesDir(dataDir: string): string {
  return join(dataDir, 'runners');
}

/** One installed version's folder: `<data>/runners/<id>@<version>/` (npm's prefix: package.json, node_modules/). */
export function packageDir(dataDir: string, runnerId: string, version: string): string {
  return join(packagesDir(dataDir), `${runnerId}@${version}`);
}

/** The runner's own folder inside an installed version (where its runner.json is). */
export function packageRunnerDir(dataDir: string, runnerId: string, version: string, packageName: string): string {
  return join(packageDir(dataDir, runnerId, version), 'node_modules', packageName);
}

/** The store's installed versions as the catalog takes them: oldest first per id, so the newest wins the bare id. */
export function installedRunnerRefs(store: Store, dataDir: string): InstalledRunnerRef[] {
  return runnerPackages(store)
    .sort((a, b) =>
      a.runnerId === b.runnerId ? compareVersions(a.version, b.version) : a.runnerId < b.runnerId ? -1 : 1,
    )
    .map((p) => ({
      id: p.runnerId,
      version: p.version,
      dir: packageRunnerDir(dataDir, p.runnerId, p.version, p.packageName),
      status: p.status,
    }));
}

/** The host's runner catalog: built-in runners, installed packages (from `store`), then the runner folders. */
export function hostCatalog(
  config: Pick<HostConfig, 'runnerDirs' | 'dataDir'>,
  store: Store,
  options: Omit<DiscoverOptions, 'installed'> = {},
): RunnerCatalog {
  return discoverRunners(config.runnerDirs, { ...options, installed: installedRunnerRefs(store, config.dataDir) });
}
