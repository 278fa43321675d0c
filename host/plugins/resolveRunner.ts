import { existsSync, statSync } from 'node:fs';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { PACKAGE_ROOT } from '../config/packageRoot.js';
import { HostError } from '../errors.js';
import { readBoundedFile } from '../util/readBoundedFile.js';
import { compileNodeEntry } from './compileEntry.js';
import { FileCache } from './fileCache.js';
import { RunnerManifestSchema, type RunnerManifestFile } from './manifest.js';

/** A runner found on disk: its folder and parsed manifest. */
export interface ResolvedRunner {
  dir: string;
  manifest: RunnerManifestFile;
}

/** The built-in runners shipped in this package. */
export const BUILTIN_RUNNERS_DIR = join(PACKAGE_ROOT, 'runners');

/** The largest `runner.json` the host reads (docs/runner-authoring.md); a bigger one is MANIFEST_INVALID. */
export const MANIFEST_MAX_BYTES = 1024 * 1024;

/** Parsed manifests, while their files are unchanged (planning reads every runner's manifest, twice per dispatch). */
const manifests = new FileCache<ResolvedRunner>();

/**
 * Read and validate `<dir>/runner.json` (parsed again only when the file changed: host/plugins/fileCache.ts;
 * each caller gets its own copy); errors name the file and the field. The manifest must be a regular file
 * of at most {@link MANIFEST_MAX_BYTES} in the folder itself (not a link, FIFO or device): the package is untrusted
 * and its manifest is read by every command that lists runners.
 */
export function loadManifest(dir: string): ResolvedRunner {
  return structuredClone(manifests.get(join(dir, 'runner.json'), () => readManifest(dir)));
}

function readManifest(dir: string): ResolvedRunner {
  const file = join(dir, 'runner.json');
  let raw: unknown;
  try {
    raw = JSON.parse(readBoundedFile(file, { maxBytes: MANIFEST_MAX_BYTES }).toString('utf8'));
  } catch (error) {
    throw new HostError('MANIFEST_INVALID', `${file}: ${(error as Error).message}`, { file });
  }
  const parsed = RunnerManifestSchema.safeParse(raw);
  if (!parsed.success) {
    // Every problem at once, each naming its field (e.g. `field env.PATH: …`).
    const problems = parsed.error.issues.map((issue) => ({
      field: issue.path.map(String).join('.') || '(root)',
      message: issue.message,
    }));
    throw new HostError(
      'MANIFEST_INVALID',
      `${file}: ${problems.map((p) => `field ${p.field}: ${p.message}`).join('; ')}`,
      { file, field: problems[0]!.field, fields: problems.map((p) => p.field) },
    );
  }
  return { dir, manifest: parsed.data };
}

/**
 * Find a runner by folder path, or by name among the built-in runners and `searchDirs`
 * (each holding one folder per runner).
 */
export function resolveRunner(ref: string, searchDirs: readonly string[] = []): ResolvedRunner {
  const asPath = resolve(ref);
  if ((ref.includes('/') || ref.startsWith('.')) && existsSync(asPath)) return loadManifest(asPath);
  if (/^[a-z0-9][a-z0-9-]*$/.test(ref)) {
    for (const base of [BUILTIN_RUNNERS_DIR, ...searchDirs]) {
      const dir = join(base, ref);
      if (existsSync(join(dir, 'runner.json'))) return loadManifest(dir);
    }
  }
  throw new HostError(
    'RUNNER_NOT_FOUND',
    `no runner "${ref}" (not a folder with runner.json, nor a built-in or configured runner name)`,
    { ref },
  );
}

/** The command line that starts a runner, and its bundle (a TypeScript entry) when it has one. */
export interface RunnerCommand {
  command: string;
  args: string[];
  /** The bundle built from a TypeScript entry (the sandbox binds this one file read-only). */
  bundle?: string;
}

/**
 * The command line that starts a resolved runner. A TypeScript entry is bundled first, confined
 * to the runner's folder (and the SDK), into `bundleDir` (the data folder's `bundles/`).
 * `{runnerDir}` in `entry.args` is the only expansion; nothing named in the command line is
 * made visible to the sandbox (runSandbox.ts).
 */
export async function runnerCommand(runner: ResolvedRunner, bundleDir: string): Promise<RunnerCommand> {
  const { entry } = runner.manifest;
  if ('node' in entry) {
    const file = resolve(runner.dir, entry.node);
    const rel = relative(runner.dir, file);
    if (rel.startsWith('..') || isAbsolute(rel) || !existsSync(file) || !statSync(file).isFile()) {
      throw new HostError(
        'MANIFEST_INVALID',
        `${join(runner.dir, 'runner.json')}: field entry.node: no file ${entry.node} inside the runner folder`,
        {
          field: 'entry.node',
        },
      );
    }
    if (!/\.(c|m)?ts$/.test(file)) return { command: process.execPath, args: [file] };
    const bundle = await compileNodeEntry(file, { root: runner.dir, bundleDir });
    return { command: process.execPath, args: [bundle], bundle };
  }
  return { command: entry.command, args: entry.args.map((a) => a.replaceAll('{runnerDir}', runner.dir)) };
}
