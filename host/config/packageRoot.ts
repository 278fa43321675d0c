import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The folder of paddock's package.json, found by walking up from this module. Works both from
 * the sources and from an esbuild bundle of the host (whose own location is elsewhere).
 */
function findPackageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, 'package.json');
    if (existsSync(candidate) && (JSON.parse(readFileSync(candidate, 'utf8')) as { name?: string }).name === 'paddock') return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error('cannot find the paddock package root');
    dir = parent;
  }
}

/** Absolute path of the paddock package (where package.json, runners/ and host/ live). */
export const PACKAGE_ROOT = findPackageRoot();
