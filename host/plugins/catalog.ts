import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { HostError } from '../errors.js';
import { compileConfigSchema } from './configSchema.js';
import { BUILTIN_RUNNERS_DIR, loadManifest, type ResolvedRunner } from './resolveRunner.js';

/** A runner folder whose manifest could not be loaded. */
export interface ManifestProblem {
  file: string;
  field?: string;
  message: string;
}

/** A runner of the catalog: where it was found (`builtin`, `installed`, or the runner folder it is in). */
export type CatalogRunner = ResolvedRunner & {
  source: 'builtin' | 'installed' | string;
  /** An installed package's state (docs/runner-packages.md): `tampered` refuses its runs. */
  package?: { version: string; status: 'ok' | 'tampered' };
};

/** Every runner the host can see, and the ones it could not load. */
export interface RunnerCatalog {
  /** By id: a built-in runner, else the newest installed version, else a runner folder's. */
  runners: Map<string, CatalogRunner>;
  /** Every installed version, by `<id>@<version>` (what a binding pinned to a version names). */
  versions: Map<string, CatalogRunner>;
  problems: ManifestProblem[];
}

/** An installed runner package version the store records (host/packages/installedRunners.ts lists them). */
export interface InstalledRunnerRef {
  id: string;
  version: string;
  /** The runner's folder (where its runner.json is). */
  dir: string;
  status: 'ok' | 'tampered';
}

/** How much of each runner {@link discoverRunners} checks. */
export interface DiscoverOptions {
  /**
   * Check the config schema of the runners with this id only (planning one run); the others are listed with their
   * manifests read but their schemas unchecked. Unset: every runner is checked (`apply`, `explain`, listings).
   */
  only?: string;
  /**
   * The installed package versions, newest last per id: discovered after the built-in runners and before the runner
   * folders; the newest version of an id is the one a binding that names the bare id runs.
   */
  installed?: readonly InstalledRunnerRef[];
}

/** The runner `ref` names: `<id>@<version>` (that installed version only) or `<id>`. */
export function findRunner(catalog: RunnerCatalog, ref: string): CatalogRunner | undefined {
  return ref.includes('@') ? catalog.versions.get(ref) : catalog.runners.get(ref);
}

/** The id part of a binding's runner reference (`<id>` or `<id>@<version>`). */
export function runnerIdOf(ref: string): string {
  const at = ref.indexOf('@');
  return at === -1 ? ref : ref.slice(0, at);
}

/**
 * Discover runners: one folder per runner with a `runner.json`, in the built-in `runners/`
 * and then each configured directory. A broken manifest (or a second runner with an id already
 * seen) is reported with its file and field; the other runners still load.
 */
export function discoverRunners(runnerDirs: readonly string[] = [], options: DiscoverOptions = {}): RunnerCatalog {
  const catalog: RunnerCatalog = { runners: new Map(), versions: new Map(), problems: [] };
  const onlyId = options.only === undefined ? undefined : runnerIdOf(options.only);
  const load = (dir: string) => {
    const loaded = loadManifest(dir);
    // Only the wanted runner's schema is compiled (ajv compiling its meta-schema is most of a dispatch's
    // planning time); a runner of that id whose schema does not compile is dropped as a full discovery drops
    // it, so the same folder wins either way.
    const check = onlyId === undefined || loaded.manifest.id === onlyId;
    return check ? withCheckedSchema(loaded, dir) : loaded;
  };
  const problemOf = (error: unknown, dir: string): ManifestProblem => {
    const e = error as HostError;
    return {
      file: (e.data?.file as string) ?? join(dir, 'runner.json'),
      field: e.data?.field as string | undefined,
      message: e.message,
    };
  };
  const bases = [BUILTIN_RUNNERS_DIR, ...runnerDirs];
  discoverFolder(BUILTIN_RUNNERS_DIR, 'builtin', catalog, load, problemOf);
  for (const p of options.installed ?? []) {
    try {
      const runner = load(p.dir);
      if (runner.manifest.id !== p.id || runner.manifest.version !== p.version)
        throw new HostError(
          'MANIFEST_INVALID',
          `${join(p.dir, 'runner.json')}: names ${runner.manifest.id}@${runner.manifest.version}, installed as ` +
            `${p.id}@${p.version}`,
          { file: join(p.dir, 'runner.json'), field: 'id' },
        );
      const entry: CatalogRunner = {
        ...runner,
        source: 'installed',
        package: { version: p.version, status: p.status },
      };
      catalog.versions.set(`${p.id}@${p.version}`, entry);
      const seen = catalog.runners.get(p.id);
      if (seen && seen.source !== 'installed') {
        catalog.problems.push({
          file: join(p.dir, 'runner.json'),
          field: 'id',
          message:
            `runner id "${p.id}" is already used by ${seen.dir} (the installed version is reachable as ` +
            `${p.id}@${p.version} only)`,
        });
        continue;
      }
      catalog.runners.set(p.id, entry);
    } catch (error) {
      catalog.problems.push(problemOf(error, p.dir));
    }
  }
  for (const base of bases.slice(1)) discoverFolder(base, base, catalog, load, problemOf);
  return catalog;
}

/** Add the runner folders of `base` (one folder per runner) to `catalog`; a taken id or a broken one is a problem. */
function discoverFolder(
  base: string,
  source: string,
  catalog: RunnerCatalog,
  load: (dir: string) => ResolvedRunner,
  problemOf: (error: unknown, dir: string) => ManifestProblem,
): void {
  if (!existsSync(base) || !statSync(base).isDirectory()) {
    catalog.problems.push({ file: base, message: 'runner directory does not exist' });
    return;
  }
  for (const name of readdirSync(base).sort()) {
    const dir = join(base, name);
    if (!existsSync(join(dir, 'runner.json'))) continue;
    try {
      const runner = load(dir);
      const seen = catalog.runners.get(runner.manifest.id);
      if (seen) {
        catalog.problems.push({
          file: join(dir, 'runner.json'),
          field: 'id',
          message: `runner id "${runner.manifest.id}" is already used by ${seen.dir}`,
        });
        continue;
      }
      catalog.runners.set(runner.manifest.id, { ...runner, source });
    } catch (error) {
      catalog.problems.push(problemOf(error, dir));
    }
  }
}

/** Load a manifest and check that its config schema compiles. */
export function checkedManifest(dir: string): ResolvedRunner {
  return withCheckedSchema(loadManifest(dir), dir);
}

/** `runner` if its config schema compiles; a MANIFEST_INVALID naming its configSchema otherwise. */
function withCheckedSchema(runner: ResolvedRunner, dir: string): ResolvedRunner {
  try {
    compileConfigSchema(runner.manifest.configSchema);
  } catch (error) {
    const file = join(dir, 'runner.json');
    throw new HostError(
      'MANIFEST_INVALID',
      `${file}: field configSchema: not a valid JSON Schema: ${(error as Error).message}`,
      { file, field: 'configSchema' },
    );
  }
  return runner;
}
