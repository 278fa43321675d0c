import { execa, type ResultPromise } from 'execa';
import { repoPath } from './fixtures.js';

/** Start the real `paddock` command (bin/paddock.js) with a private data folder. */
export function paddock(
  args: string[],
  options: { dataDir: string; env?: Record<string, string>; input?: string },
): ResultPromise<{ reject: false; cwd: string; env: Record<string, string> }> {
  return execa(process.execPath, [repoPath('bin/paddock.js'), ...args], {
    reject: false,
    cwd: repoPath('.'),
    env: { PADDOCK_HOME: options.dataDir, NO_COLOR: '1', ...options.env },
    ...(options.input !== undefined ? { input: options.input } : {}),
  }) as never;
}

/** Parse `--json` output: one object per line. */
export function jsonLines(stdout: string): { type: string; [k: string]: unknown }[] {
  return stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { type: string });
}
