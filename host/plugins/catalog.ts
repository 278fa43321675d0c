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

/** Every runner the host can see, and the ones it could not load. */
export interface RunnerCatalog {
  runners: Map<string, ResolvedRunner & { source: 'builtin' | string }>;
  problems: ManifestProblem[];
}

/** How much of each runner {@link discoverRunners} checks. */
export interface DiscoverOptions {
  /**
   * Check the config schema of the runners with this id only (planning one run); the others are listed with their
   * manifests read but their schemas unchecked. Unset: every runner is checked (`apply`, `explain`, listings).
   */
  only?: string;
}

/**
 * Discover runners: one folder per runner with a `runner.json`, in the built-in `runners/`
 * and then each configured directory. A broken manifest (or a second runner with an id already
 * seen) is reported with its file and field; the other runners still load.
 */
export function discoverRunners(runnerDirs: readonly string[] = [], options: DiscoverOptions = {}): RunnerCatalog {
  const catalog: RunnerCatalog = { runners: new Map(), problems: [] };
  for (const base of [BUILTIN_RUNNERS_DIR, ...runnerDirs]) {
    if (!existsSync(base) || !statSync(base).isDirectory()) {
      catalog.problems.push({ file: base, message: 'runner directory does not exist' });
      continue;
    }
    for (const name of readdirSync(base).sort()) {
      const dir = join(base, name);
      if (!existsSync(join(dir, 'runner.json'))) continue;
      try {
        const loaded = loadManifest(dir);
        // Only the wanted runner's schema is compiled (ajv compiling its meta-schema is most of a dispatch's
        // planning time); a runner of that id whose schema does not compile is dropped as a full discovery drops
        // it, so the same folder wins either way.
        const check = options.only === undefined || loaded.manifest.id === options.only;
        const runner = check ? withCheckedSchema(loaded, dir) : loaded;
        const seen = catalog.runners.get(runner.manifest.id);
        if (seen) {
          catalog.problems.push({
            file: join(dir, 'runner.json'),
            field: 'id',
            message: `runner id "${runner.manifest.id}" is already used by ${seen.dir}`,
          });
          continue;
        }
        catalog.runners.set(runner.manifest.id, { ...runner, source: base === BUILTIN_RUNNERS_DIR ? 'builtin' : base });
      } catch (error) {
        const e = error as HostError;
        catalog.problems.push({
          file: (e.data?.file as string) ?? join(dir, 'runner.json'),
          field: e.data?.field as string | undefined,
          message: e.message,
        });
      }
    }
  }
  return catalog;
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
