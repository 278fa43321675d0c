import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { locateHarness } from '../../sdk/harness/locate.js';
import { PACKAGE_ROOT } from '../config/packageRoot.js';

/** The project-local install of the pinned harness CLIs (`scripts/install-harnesses.sh`). */
export const HARNESS_DIR = join(PACKAGE_ROOT, '.harness');

/** One harness CLI as found on this machine, with the version it reports. */
export interface HarnessReport {
  name: 'claude' | 'codex';
  found: boolean;
  path?: string;
  version?: string;
  problem?: string;
}

/** Find each harness CLI (the project install first, then PATH) and ask it for its version. */
export function harnessReports(): HarnessReport[] {
  return (['claude', 'codex'] as const).map((name) => {
    const located = locateHarness(name, { ...process.env, PADDOCK_HARNESS_DIR: HARNESS_DIR });
    if (!located) return { name, found: false, problem: 'not installed: run scripts/install-harnesses.sh' };
    try {
      const version = execFileSync(located.command, [...located.prefix, '--version'], {
        encoding: 'utf8',
        timeout: 20_000,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/nonexistent' },
      })
        .trim()
        .split('\n')[0];
      return { name, found: true, path: located.path, version };
    } catch (error) {
      return {
        name,
        found: true,
        path: located.path,
        problem: `--version failed: ${(error as Error).message.split('\n')[0]}`,
      };
    }
  });
}
