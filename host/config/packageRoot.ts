import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The folder of paddock's package.json, found by walking up from this module. Works both from
 * the sources and from an esbuild bundle of the host (whose own location is elsewhere).
 */
function findPackageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, 'package.json');
    if (existsSync(candidate) && (JSON.parse(readFileSync(candidate, 'utf8')) as { name?: string }).name === 'paddock')
      return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error('cannot find the paddock package root');
    dir = parent;
  }
}

/** Absolute path of the paddock package (where package.json, runners/ and host/ live). */
export const PACKAGE_ROOT = findPackageRoot();

/** The nearest ancestor of `path` (or `path` itself) named node_modules, if any. */
function enclosingModulesDir(path: string): string | undefined {
  for (let dir = path; dirname(dir) !== dir; dir = dirname(dir)) if (basename(dir) === 'node_modules') return dir;
  return undefined;
}

let moduleDirs: readonly string[] | undefined;

/**
 * The node_modules folders (real paths) paddock's own runtime dependencies load from: `<package>/node_modules` in a
 * clone; the installing project's node_modules, where npm hoists them, when paddock is an installed package. Found as
 * Node finds them (nearest node_modules up from the package holding each dependency), then each followed to its real
 * folder. Runner bundles import these dependencies by absolute path, and a sandbox binds exactly these read-only.
 */
export function hostModuleDirs(): readonly string[] {
  if (moduleDirs) return moduleDirs;
  const pkg = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
  };
  const dirs = new Set<string>();
  for (const name of Object.keys(pkg.dependencies ?? {})) {
    for (let dir = PACKAGE_ROOT; ; dir = dirname(dir)) {
      const installed = basename(dir) === 'node_modules' ? undefined : join(dir, 'node_modules', name);
      if (installed && existsSync(join(installed, 'package.json'))) {
        const modules = enclosingModulesDir(realpathSync(installed));
        if (modules) dirs.add(modules);
        break;
      }
      if (dirname(dir) === dir) break;
    }
  }
  moduleDirs = dirs.size > 0 ? [...dirs] : [join(PACKAGE_ROOT, 'node_modules')];
  return moduleDirs;
}
