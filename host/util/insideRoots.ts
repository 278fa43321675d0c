import { existsSync, realpathSync } from 'node:fs';
import { isAbsolute, relative } from 'node:path';

/** Real path of `path` if it lies under one of `roots` (symlinks resolved on both sides). */
export function insideRoots(path: string, roots: readonly string[]): string | undefined {
  if (!existsSync(path)) return undefined;
  const real = realpathSync(path);
  for (const root of roots) {
    if (!existsSync(root)) continue;
    const rel = relative(realpathSync(root), real);
    if (rel === '' || (!rel.startsWith('..') && !isAbsolute(rel))) return real;
  }
  return undefined;
}
