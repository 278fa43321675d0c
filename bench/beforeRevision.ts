// A benchmark's "before" figure from the code as it was, not from a copy kept in the tree: files of a git revision
// extracted beside the package (so their relative and package imports resolve as they did) and imported from there.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGE = fileURLToPath(new URL('..', import.meta.url));

/** The revision issue 16 started from: the "before" of its benchmarks. */
export const ISSUE_16_START = '30f6f85118731461773660109b6a405b2a13cb91';

/**
 * Extract `paths` (files or folders) as they were at `revision` into node_modules/.cache/paddock/before/<revision>/
 * (once) and return a URL for importing `entry` (a path relative to the package) from there.
 */
export async function importAtRevision<T>(revision: string, paths: string[], entry: string): Promise<T> {
  const root = join(PACKAGE, 'node_modules', '.cache', 'paddock', 'before', revision);
  if (!existsSync(join(root, entry))) {
    mkdirSync(root, { recursive: true });
    const archive = execFileSync('git', ['-C', PACKAGE, 'archive', '--format=tar', revision, '--', ...paths]);
    execFileSync('tar', ['-x', '-C', root], { input: archive });
  }
  return (await import(join(root, entry))) as T;
}
