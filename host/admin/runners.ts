/** The runners a host finds, as `paddock runners list --json` and `GET /v1/runners` show them. */
import type { ManifestProblem, RunnerCatalog } from '../plugins/catalog.js';
import type { RunnerManifestFile } from '../plugins/manifest.js';

/** Every runner found (its manifest, folder and source) and every runner that could not be loaded, with why. */
export interface RunnerListing {
  runners: (RunnerManifestFile & { dir: string; source: string })[];
  problems: ManifestProblem[];
}

/** The runners of a catalog (hostCatalog: the same one `apply` and planning use). */
export function listRunners(catalog: RunnerCatalog): RunnerListing {
  return {
    runners: [...catalog.runners.values()].map((r) => ({ ...r.manifest, dir: r.dir, source: r.source })),
    problems: catalog.problems,
  };
}
