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

/**
 * Discover runners: one folder per runner with a `runner.json`, in the built-in `runners/`
 * and then each configured directory. A broken manifest (or a second runner with an id already
 * seen) is reported with its file and field; the other runners still load.
 */
export function discoverRunners(runnerDirs: readonly string[] = []): RunnerCatalog {
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
        const runner = checkedManifest(dir);
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
  const runner = loadManifest(dir);
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
