import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { basename, join, resolve } from 'node:path';
import { hostModuleDirs, PACKAGE_ROOT } from '../config/packageRoot.js';
import type * as Esbuild from 'esbuild';
import { HostError } from '../errors.js';
import { readBoundedFile } from '../util/readBoundedFile.js';
import { confineBuild } from './confineBuild.js';
import { InputHashes } from './inputHashes.js';

const OWN_DEPENDENCIES = Object.keys(
  (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> })
    .dependencies,
);
/** The paddock SDK: every runner build may read it (its alias targets and relative imports into it). */
const SDK_DIR = join(PACKAGE_ROOT, 'sdk');
// Bundled CJS code may call require(); give ESM output one.
const REQUIRE_SHIM =
  "import { createRequire as __paddockCreateRequire } from 'node:module'; const require = " +
  '__paddockCreateRequire(import.meta.url);';

/** Where a build may read from and where its bundle goes. */
export interface EntryBuild {
  /** The folder the build is confined to (a runner's folder); the SDK is always readable too. */
  root: string;
  /** Where bundles are kept (a runner's: `<data>/bundles`, mode 0700). */
  bundleDir: string;
}

/**
 * For the host's own code (tests, benches): the whole package may be read, bundles are cached
 * in node_modules/.cache. Runner packages never use this (runnerCommand confines to the runner).
 */
export const HOST_CODE_BUILD: EntryBuild = {
  root: PACKAGE_ROOT,
  bundleDir: join(PACKAGE_ROOT, 'node_modules', '.cache', 'paddock', 'runners'),
};

interface CacheEntry {
  outFile: string;
  /** The bundle's own sha256: a run of the process backend (the host user) can rewrite the file, so it is checked. */
  sha256: string;
  /** Each input's path and sha256 (content, not mtime: a changed file never serves an old bundle). */
  inputs: { path: string; sha256: string }[];
}
const builds = new Map<string, CacheEntry>();

const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');
/** The cache key of an entry under a build: a different root or bundle folder is a different build. */
const keyOf = (entryFile: string, build: EntryBuild) => `${build.root}\0${build.bundleDir}\0${entryFile}`;
/** Inputs of every cached bundle, kept on disk so a fresh host process can skip esbuild too. */
const manifestOf = (build: EntryBuild) => join(build.bundleDir, 'manifest.json');

function cachedBuild(entryFile: string, build: EntryBuild): CacheEntry | undefined {
  const key = keyOf(entryFile, build);
  let entry = builds.get(key);
  if (!entry) {
    try {
      entry = (JSON.parse(readFileSync(manifestOf(build), 'utf8')) as Record<string, CacheEntry>)[key];
    } catch {
      return undefined;
    }
  }
  return entry &&
    Array.isArray(entry.inputs) &&
    typeof entry.sha256 === 'string' &&
    inputHashes.matches(entry.outFile, entry.sha256) &&
    entry.inputs.every(unchanged)
    ? entry
    : undefined;
}

function remember(entryFile: string, build: EntryBuild, entry: CacheEntry): void {
  const key = keyOf(entryFile, build);
  builds.set(key, entry);
  let all: Record<string, CacheEntry> = {};
  try {
    all = JSON.parse(readFileSync(manifestOf(build), 'utf8')) as Record<string, CacheEntry>;
  } catch {
    // first build, or a torn file: start over
  }
  all[key] = entry;
  const tmp = `${manifestOf(build)}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(all), { mode: 0o600 });
  renameSync(tmp, manifestOf(build));
}

/**
 * Turn a TypeScript runner entry into one ESM file plain `node` can start (tsx's loader costs
 * ~0.4 s per start; a bundle starts like any JS file). The build is confined to `build.root` and
 * the SDK (confineBuild.ts: no import, loader or tsconfig reaches anything else); `paddock/sdk`
 * resolves to this host's SDK, and paddock's runtime dependencies stay external, imported by
 * absolute path from the host's node_modules. Output is content-addressed in `build.bundleDir`;
 * a build is reused while every input has the same content.
 */
export async function compileNodeEntry(entryFile: string, build: EntryBuild = HOST_CODE_BUILD): Promise<string> {
  const cached = cachedBuild(entryFile, build);
  if (cached) return cached.outFile;

  const esbuild = await import('esbuild'); // loaded only when something must be built
  let result: Esbuild.BuildResult<{ write: false; metafile: true }>;
  try {
    result = await esbuild.build({
      entryPoints: [entryFile],
      absWorkingDir: build.root,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      write: false,
      metafile: true,
      logLevel: 'silent',
      banner: { js: REQUIRE_SHIM },
      external: [...builtinModules, 'node:*'],
      plugins: [
        confineBuild([build.root, SDK_DIR], {
          names: OWN_DEPENDENCIES,
          resolveDir: PACKAGE_ROOT,
          moduleDirs: hostModuleDirs(),
        }),
      ],
      alias: {
        'paddock/sdk/testing': join(SDK_DIR, 'testing/index.ts'),
        'paddock/sdk': join(SDK_DIR, 'index.ts'),
      },
      // Given raw, so esbuild reads no tsconfig.json from the tree (its `extends`/`paths` could point anywhere).
      tsconfigRaw: { compilerOptions: { experimentalDecorators: true, verbatimModuleSyntax: true } },
    });
  } catch (error) {
    const failure = error as Esbuild.BuildFailure;
    const first = failure.errors?.[0];
    const where = first?.location ? `${first.location.file}:${first.location.line}:${first.location.column}: ` : '';
    throw new HostError(
      'RUNNER_BUILD_FAILED',
      `cannot build runner entry ${entryFile}: ${where}${first?.text ?? String(error)}`,
      {
        entryFile,
      },
    );
  }
  const output = result.outputFiles.find((f) => /\.m?js$/.test(f.path)) ?? result.outputFiles[0]!;
  const text = output.text;
  const hash = sha256(text);
  const outFile = join(build.bundleDir, `${basename(entryFile).replace(/\.[cm]?ts$/, '')}-${hash.slice(0, 16)}.mjs`);
  mkdirSync(build.bundleDir, { recursive: true, mode: 0o700 });
  chmodSync(build.bundleDir, 0o700);
  // Written unless it holds exactly this bundle: a file of this name that was changed is replaced, never run.
  if (!inputHashes.matches(outFile, hash)) {
    const tmp = `${outFile}.${process.pid}.tmp`;
    // The folder (0700) keeps bundles private on the host; the file itself is world-readable so a
    // run mapped to another uid can still read the one bundle bound into its sandbox.
    writeFileSync(tmp, text, { mode: 0o644 });
    chmodSync(tmp, 0o644); // whatever the umask
    renameSync(tmp, outFile); // atomic: a concurrent host never starts a half-written file
  }
  const inputs = Object.keys(result.metafile.inputs).map((p) => {
    const path = resolve(build.root, p); // metafile paths are relative to absWorkingDir
    // The package is untrusted: a file swapped for a FIFO or device after esbuild read it must not hang the host.
    try {
      return { path, sha256: sha256(readBoundedFile(path, { followLinks: true })) };
    } catch (error) {
      throw new HostError('MANIFEST_INVALID', `${path}: ${(error as Error).message}`, {
        file: path,
        field: 'entry.node',
      });
    }
  });
  remember(entryFile, build, { outFile, sha256: hash, inputs });
  return outFile;
}

/** Inputs already hashed by this process: a run's start re-reads only what changed (issue 16, warm and cold starts). */
const inputHashes = new InputHashes();

function unchanged(input: CacheEntry['inputs'][number]): boolean {
  return inputHashes.matches(input.path, input.sha256);
}
