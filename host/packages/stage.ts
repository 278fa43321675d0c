import { execFile } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { HostError } from '../errors.js';

/** Where a package came from (docs/runner-packages.md, "Install without running the package's code"). */
export type PackageSource = 'registry' | 'folder' | 'tarball';

/** A package npm fetched and unpacked into a staging folder, none of its scripts run. */
export interface StagedPackage {
  /** The staging folder: npm's prefix (`package.json`, `package-lock.json`, `node_modules/`). */
  dir: string;
  /** The runner's own folder inside it (`node_modules/<name>`), where runner.json must be. */
  runnerDir: string;
  source: PackageSource;
  /** The npm package name and version npm installed. */
  name: string;
  version: string;
  /** npm's integrity of the package (`sha512-…`), when npm has one (a registry tarball). */
  integrity: string | null;
  /** Packages of the tree whose install scripts npm saw and did not run (the runner's own first). */
  skippedInstallScripts: string[];
}

/** What a spec names: an existing folder or tarball (made absolute), else a registry spec for npm. */
export function classifySpec(spec: string, cwd = process.cwd()): { source: PackageSource; npmSpec: string } {
  const path = resolve(cwd, spec);
  if ((spec.startsWith('.') || spec.startsWith('/') || spec.includes('/')) && existsSync(path)) {
    if (statSync(path).isDirectory()) return { source: 'folder', npmSpec: path };
    if (/\.(tgz|tar\.gz|tar)$/.test(path)) return { source: 'tarball', npmSpec: path };
  }
  return { source: 'registry', npmSpec: spec };
}

/**
 * The npm arguments that install a package without running any code of it: no lifecycle script of the package or
 * of any dependency (`--ignore-scripts`: not `preinstall`/`install`/`postinstall`, not a folder's `prepare`/
 * `prepack`), no bin links, no dev dependencies, a folder packed and copied like a tarball instead of linked.
 */
export const NPM_INSTALL_ARGS = [
  'install',
  '--ignore-scripts',
  '--install-links',
  '--no-bin-links',
  '--omit=dev',
  '--no-audit',
  '--no-fund',
  '--no-update-notifier',
  '--loglevel=error',
];

/** Run npm in `cwd`; resolves with stdout, rejects with a HostError carrying npm's own words. */
function npm(args: string[], cwd: string, npmBin: string): Promise<string> {
  return new Promise((done, fail) => {
    execFile(npmBin, args, { cwd, maxBuffer: 16 * 1024 * 1024, timeout: 10 * 60_000 }, (error, stdout, stderr) => {
      if (!error) return done(stdout);
      const words = (stderr || error.message).trim().split('\n').slice(-12).join('\n');
      fail(new HostError('INVALID_INPUT', `npm ${args[0]} failed:\n${words}`, { npm: args }));
    });
  });
}

/**
 * Fetch and unpack `spec` (a registry spec, a folder or a tarball) with npm's own client into the empty folder
 * `dir`, dependencies included and no script run; answers what was installed. The package is not yet checked:
 * the caller validates the tree and the manifest before anything is kept.
 */
export async function stagePackage(spec: string, dir: string, options: { npm?: string } = {}): Promise<StagedPackage> {
  const { source, npmSpec } = classifySpec(spec);
  // A private root package so that npm records what it installed as its one dependency (the package's name). Named,
  // so that npm's lock files do not take the staging folder's random name: the same package staged twice is the
  // same tree (the same digest).
  writeFileSync(join(dir, 'package.json'), '{ "name": "paddock-runner-install", "private": true }\n');
  await npm([...NPM_INSTALL_ARGS, '--', npmSpec], dir, options.npm ?? 'npm');
  const root = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
  const names = Object.keys(root.dependencies ?? {});
  if (names.length !== 1) throw new HostError('INVALID_INPUT', `npm installed ${names.length} packages for ${spec}`);
  const name = names[0]!;
  const lock = JSON.parse(readFileSync(join(dir, 'package-lock.json'), 'utf8')) as {
    packages?: Record<string, { version?: string; integrity?: string; hasInstallScript?: boolean }>;
  };
  const packages = lock.packages ?? {};
  const own = packages[`node_modules/${name}`] ?? {};
  const skippedInstallScripts = Object.entries(packages)
    .filter(([path, p]) => path !== '' && p.hasInstallScript === true)
    .map(([path]) => path.replace(/^.*node_modules\//, ''))
    .sort((a, b) => (a === name ? -1 : b === name ? 1 : a.localeCompare(b)));
  return {
    dir,
    runnerDir: join(dir, 'node_modules', name),
    source,
    name,
    version: own.version ?? '',
    integrity: own.integrity ?? null,
    skippedInstallScripts,
  };
}
