import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { basename, join, resolve } from 'node:path';
import { PACKAGE_ROOT } from '../config/packageRoot.js';
import type * as Esbuild from 'esbuild';
import { HostError } from '../errors.js';

/** Inside the package, so bundles resolve paddock's own dependencies from its node_modules. */
const CACHE_DIR = join(PACKAGE_ROOT, 'node_modules', '.cache', 'paddock', 'runners');
const OWN_DEPENDENCIES = Object.keys(
  (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }).dependencies,
);
// Bundled CJS code may call require(); give ESM output one.
const REQUIRE_SHIM = "import { createRequire as __paddockCreateRequire } from 'node:module'; const require = __paddockCreateRequire(import.meta.url);";

interface CacheEntry {
  outFile: string;
  inputs: { path: string; mtimeMs: number; size: number }[];
}
const builds = new Map<string, CacheEntry>();
/** Inputs of every cached bundle, kept on disk so a fresh host process can skip esbuild too. */
const MANIFEST = join(CACHE_DIR, 'manifest.json');

function cachedBuild(entryFile: string): CacheEntry | undefined {
  let entry = builds.get(entryFile);
  if (!entry) {
    try {
      entry = (JSON.parse(readFileSync(MANIFEST, 'utf8')) as Record<string, CacheEntry>)[entryFile];
    } catch {
      return undefined;
    }
  }
  return entry && existsSync(entry.outFile) && entry.inputs.every(unchanged) ? entry : undefined;
}

function remember(entryFile: string, entry: CacheEntry): void {
  builds.set(entryFile, entry);
  let all: Record<string, CacheEntry> = {};
  try {
    all = JSON.parse(readFileSync(MANIFEST, 'utf8')) as Record<string, CacheEntry>;
  } catch {
    // first build, or a torn file: start over
  }
  all[entryFile] = entry;
  const tmp = `${MANIFEST}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(all));
  renameSync(tmp, MANIFEST);
}

/**
 * Turn a TypeScript runner entry into one ESM file plain `node` can start (tsx's loader costs
 * ~0.4 s per start; a bundle starts like any JS file). The runner's own code and imports are
 * bundled, `paddock/sdk` resolves to this host's SDK, and paddock's runtime dependencies stay
 * external. Output is content-addressed; a build is reused while none of its inputs changed.
 */
export async function compileNodeEntry(entryFile: string): Promise<string> {
  const cached = cachedBuild(entryFile);
  if (cached) return cached.outFile;

  const esbuild = await import('esbuild'); // loaded only when something must be built
  let result: Esbuild.BuildResult<{ write: false; metafile: true }>;
  try {
    result = await esbuild.build({
      entryPoints: [entryFile],
      absWorkingDir: PACKAGE_ROOT,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      write: false,
      metafile: true,
      logLevel: 'silent',
      banner: { js: REQUIRE_SHIM },
      external: [...builtinModules, 'node:*', ...OWN_DEPENDENCIES, ...OWN_DEPENDENCIES.map((d) => `${d}/*`)],
      alias: {
        'paddock/sdk/testing': join(PACKAGE_ROOT, 'sdk/testing/index.ts'),
        'paddock/sdk': join(PACKAGE_ROOT, 'sdk/index.ts'),
      },
      tsconfigRaw: { compilerOptions: { experimentalDecorators: true, verbatimModuleSyntax: true } },
    });
  } catch (error) {
    const failure = error as Esbuild.BuildFailure;
    const first = failure.errors?.[0];
    const where = first?.location ? `${first.location.file}:${first.location.line}:${first.location.column}: ` : '';
    throw new HostError('RUNNER_BUILD_FAILED', `cannot build runner entry ${entryFile}: ${where}${first?.text ?? String(error)}`, {
      entryFile,
    });
  }
  const text = result.outputFiles[0]!.text;
  const hash = createHash('sha256').update(text).digest('hex').slice(0, 16);
  const outFile = join(CACHE_DIR, `${basename(entryFile).replace(/\.[cm]?ts$/, '')}-${hash}.mjs`);
  if (!existsSync(outFile)) {
    mkdirSync(CACHE_DIR, { recursive: true });
    const tmp = `${outFile}.${process.pid}.tmp`;
    writeFileSync(tmp, text);
    renameSync(tmp, outFile); // atomic: a concurrent host never starts a half-written file
  }
  const inputs = Object.keys(result.metafile.inputs).map((p) => {
    const path = resolve(PACKAGE_ROOT, p);
    const st = statSync(path);
    return { path, mtimeMs: st.mtimeMs, size: st.size };
  });
  remember(entryFile, { outFile, inputs });
  return outFile;
}

function unchanged(input: CacheEntry['inputs'][number]): boolean {
  try {
    const st = statSync(input.path);
    return st.mtimeMs === input.mtimeMs && st.size === input.size;
  } catch {
    return false;
  }
}
