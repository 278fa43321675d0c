import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunnerLaunch } from '../process/spawnRunner.js';
import { HOST_HELPER_ENV, requireHostTool } from './hostTools.js';

/**
 * The host-side launch shell: opens the launch file on fd 3 and removes its private folder, moves
 * itself into each `cgroup.procs` file given before `--`, then execs the rest. It runs with
 * {@link HOST_HELPER_ENV} only, and every program it execs is an absolute path.
 */
const LAUNCH_SCRIPT =
  'd=$1; shift; exec 3<"$d/launch" || exit 95; "$0" -rf -- "$d"; while [ "$1" != "--" ]; do echo $$ > "$1" || ' +
  'exit 97; shift; done; shift; exec "$@"';

/**
 * Process backend only (bash started with --norc --noprofile: Debian's bash would otherwise read
 * ~/.bashrc because its stdin, a socket pair, looks like an rsh connection): load the runner's environment
 * (NUL-separated `NAME=value` on fd 3) into
 * an otherwise empty environment, close fd 3, then exec the runner's command through `env -u
 * SHLVL` (bash's exec would add SHLVL). Only this last exec — the runner's own command — sees
 * the runner's environment.
 */
const ENV_LOADER =
  'unset -v PATH LANG PWD OLDPWD SHLVL _; while IFS= read -r -d "" kv; do export -- "$kv" || exit 96; done ' +
  '<&3; exec 3<&-; exec "$@"';

/** A host-side launch: the command line (helpers by absolute path) and what it hands over on fd 3. */
export interface HostLaunch {
  launch: RunnerLaunch;
  /** Remove the launch file if the launch never started (the launch shell removes it otherwise). */
  discard(): void;
}

/** The payload of the launch file: NUL-separated words; a NUL inside one would split it. */
function nulJoined(words: readonly string[], what: string): string {
  for (const w of words) if (w.includes('\0')) throw new Error(`${what} contains a NUL byte`);
  return words.map((w) => `${w}\0`).join('');
}

/**
 * Build the host-side launch chain: launch shell (cgroup join) → prlimit → bwrap (its options
 * from fd 3, `--clearenv` + `--setenv`, so the run's environment reaches only the sandboxed
 * process) or, for the process backend, the env loader → the runner's command. Every helper is
 * an absolute path, runs with {@link HOST_HELPER_ENV}, and never sees the runner's environment.
 */
export function hostLaunch(opts: {
  runner: RunnerLaunch;
  procsFiles: readonly string[];
  prlimit?: string[];
  /** `prefix`: what runs just before bwrap (e.g. opening the run's user namespace), absolute paths only. */
  bwrap?: { path: string; options: string[]; inner: string[]; prefix?: string[] };
}): HostLaunch {
  const sh = requireHostTool('sh');
  const rm = requireHostTool('rm');
  const dir = mkdtempSync(join(tmpdir(), 'paddock-launch-')); // 0700, owned by the host user
  const payload = opts.bwrap
    ? nulJoined(opts.bwrap.options, 'a sandbox option')
    : nulJoined(
        Object.entries(opts.runner.env).map(([k, v]) => `${k}=${v}`),
        'the runner environment',
      );
  writeFileSync(join(dir, 'launch'), payload, { mode: 0o600 });
  const tail = opts.bwrap
    ? [...(opts.bwrap.prefix ?? []), opts.bwrap.path, '--args', '3', '--', ...opts.bwrap.inner]
    : [
        requireHostTool('bash'),
        '--norc',
        '--noprofile',
        '-c',
        ENV_LOADER,
        'paddock-env',
        requireHostTool('env'),
        '-u',
        'SHLVL',
        '--',
        opts.runner.command,
        ...opts.runner.args,
      ];
  // $0 of the launch shell is rm's absolute path (the script calls "$0" to remove the folder).
  const args = ['-c', LAUNCH_SCRIPT, rm, dir, ...opts.procsFiles, '--', ...(opts.prlimit ?? []), ...tail];
  return {
    launch: { command: sh, args, cwd: opts.runner.cwd, env: { ...HOST_HELPER_ENV } },
    discard: () => rmSync(dir, { recursive: true, force: true }),
  };
}
