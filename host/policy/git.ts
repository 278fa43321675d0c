import { execFileSync } from 'node:child_process';

/**
 * Settings that stop a repository a runner could write from running code in the host's git:
 * hooks, fsmonitor, external diff and text-conversion drivers, filters, pagers, editors, and
 * transports that execute programs. Later `-c` values win over the repository's own config.
 */
export const HARDENED_GIT_CONFIG = [
  'core.hooksPath=/dev/null',
  'core.fsmonitor=false',
  'core.pager=cat',
  'core.editor=false',
  'core.sshCommand=false',
  'core.askPass=',
  'diff.external=',
  'protocol.allow=never',
  'protocol.https.allow=always',
  'safe.directory=*',
] as const;

/**
 * Run git on a workspace the host does not trust: no system or global config, the hardened
 * settings above, `--no-ext-diff --no-textconv` where it matters, no prompts, a clean
 * environment. Filters and diff drivers named by `.gitattributes` are disabled by pointing every
 * `filter.<name>` and `diff.<name>` the repo config mentions at nothing.
 */
export function hardenedGit(cwd: string, args: string[], options: { input?: string } = {}): string {
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_OPTIONAL_LOCKS: '0',
    HOME: '/nonexistent',
  };
  // Drivers the repository itself declares (filter.x.clean, diff.x.textconv, …) are neutralised.
  let declared: string[] = [];
  try {
    declared = execFileSync('git', ['config', '--local', '--name-only', '--get-regexp', '^(filter|diff|merge)\\.'], {
      cwd,
      env,
      encoding: 'utf8',
    })
      .split('\n')
      .filter(Boolean);
  } catch {
    declared = []; // none, or not a repository yet
  }
  const neutral = declared.flatMap((key) => ['-c', `${key}=`]);
  const config = HARDENED_GIT_CONFIG.flatMap((c) => ['-c', c]);
  const noDrivers = ['diff', 'log', 'show'].includes(args[0] ?? '') ? ['--no-ext-diff', '--no-textconv'] : [];
  return execFileSync('git', [...config, ...neutral, args[0]!, ...noDrivers, ...args.slice(1)], {
    cwd,
    env,
    encoding: 'utf8',
    input: options.input,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}
