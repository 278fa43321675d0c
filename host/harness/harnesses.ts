import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
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

const HARNESS_NAMES = ['claude', 'codex'] as const;

/** How a harness is asked for its version: a command, its arguments and the options of the call. */
type VersionCall = (command: string, args: string[], options: VersionOptions) => string | Promise<string>;

/** The version call's options: a clean environment, a bound on time. */
type VersionOptions = { encoding: 'utf8'; timeout: number; env: NodeJS.ProcessEnv };
const VERSION_OPTIONS: VersionOptions = {
  encoding: 'utf8',
  timeout: 20_000,
  env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/nonexistent' },
};

/** One harness's report, asking for its version with `call` (sync for the CLI, async for the server). */
function reportOf(name: HarnessReport['name'], call: VersionCall): HarnessReport | Promise<HarnessReport> {
  const located = locateHarness(name, { ...process.env, PADDOCK_HARNESS_DIR: HARNESS_DIR });
  if (!located) return { name, found: false, problem: 'not installed: run scripts/install-harnesses.sh' };
  const found = (output: string): HarnessReport => ({
    name,
    found: true,
    path: located.path,
    version: output.trim().split('\n')[0],
  });
  const failed = (error: unknown): HarnessReport => ({
    name,
    found: true,
    path: located.path,
    problem: `--version failed: ${(error as Error).message.split('\n')[0]}`,
  });
  try {
    const output = call(located.command, [...located.prefix, '--version'], VERSION_OPTIONS);
    return typeof output === 'string' ? found(output) : output.then(found, failed);
  } catch (error) {
    return failed(error);
  }
}

/** Find each harness CLI (the project install first, then PATH) and ask it for its version. */
export function harnessReports(): HarnessReport[] {
  const sync: VersionCall = (command, args, options) =>
    execFileSync(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
  return HARNESS_NAMES.map((name) => reportOf(name, sync) as HarnessReport);
}

/**
 * {@link harnessReports} without blocking the event loop (each CLI's start takes ~200 ms): what a server answers
 * `GET /v1/doctor` with.
 */
export function harnessReportsAsync(): Promise<HarnessReport[]> {
  const run = promisify(execFile);
  const async: VersionCall = async (command, args, options) => String((await run(command, args, options)).stdout);
  return Promise.all(HARNESS_NAMES.map((name) => reportOf(name, async)));
}
