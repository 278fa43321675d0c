import { createHash } from 'node:crypto';
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { ValidateFunction } from 'ajv/dist/2020.js';
import { PACKAGE_ROOT } from '../config/packageRoot.js';

const require = createRequire(import.meta.url);

/**
 * Where compiled config validators are kept: with the package, like the host's own runner bundles
 * (`PADDOCK_VALIDATOR_CACHE_DIR` moves it; tests use that). A validator is ajv's standalone code for one schema,
 * made the first time this machine compiled that schema (after it passed the meta-schema check); later processes
 * load it instead of loading ajv, building an instance and compiling — about 30 ms of every CLI dispatch
 * (docs/benchmarks.md, "CLI start-up"). The code is what ajv generates (and evaluates) for the schema anyway: a
 * schema's strings reach it only as JSON literals.
 */
function cacheDir(): string {
  return (
    process.env.PADDOCK_VALIDATOR_CACHE_DIR ?? join(PACKAGE_ROOT, 'node_modules', '.cache', 'paddock', 'validators')
  );
}

/** The cache key of `schemaText` compiled with `optionsText` by the installed ajv (another version, another key). */
export function validatorKey(schemaText: string, optionsText: string): string {
  const version = (require('ajv/package.json') as { version: string }).version;
  return createHash('sha256').update(`ajv ${version}\0${optionsText}\0${schemaText}`).digest('hex');
}

/** The validator kept under `key`, or undefined (none, or a file that does not load as one). */
export function cachedValidator(key: string): ValidateFunction | undefined {
  const file = join(cacheDir(), `${key}.cjs`);
  try {
    const loaded = require(file) as unknown;
    return typeof loaded === 'function' ? (loaded as ValidateFunction) : undefined;
  } catch {
    // Missing, unreadable or not a module: the caller compiles (and rewrites it).
    delete require.cache[file];
    return undefined;
  }
}

/**
 * Keep ajv's standalone `code` under `key`. Its `require("ajv/…")` calls are made absolute, so the file loads
 * wherever the cache is; written to a temporary name and renamed, so a reader never loads half a file. A cache that
 * cannot be written is skipped: validation works the same, only slower.
 */
export function keepValidator(key: string, code: string): void {
  const dir = cacheDir();
  const absolute = code.replace(/require\("(ajv\/[^"]+)"\)/g, (_, spec: string) => {
    return `require(${JSON.stringify(require.resolve(spec))})`;
  });
  const tmp = join(dir, `${key}.${process.pid}.tmp`);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    writeFileSync(tmp, absolute, { mode: 0o644 });
    renameSync(tmp, join(dir, `${key}.cjs`));
  } catch {
    try {
      rmSync(tmp, { force: true });
    } catch {
      // The folder itself is unusable (e.g. a file stands where it should be): nothing was written.
    }
  }
}
