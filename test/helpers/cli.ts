import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
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

/**
 * `paddock apply` of `yaml` (written to `<dataDir>/paddock.yaml`), then a platform token of the default tenant, both
 * through the real command; fails the test naming the command's stderr. Returns the token.
 */
export async function applyWithPlatformToken(dataDir: string, yaml: string, env: Record<string, string> = {}) {
  const file = join(dataDir, 'paddock.yaml');
  writeFileSync(file, yaml);
  const applied = await paddock(['apply', '-f', file], { dataDir, env });
  expect(applied.exitCode, applied.stderr).toBe(0);
  const created = await paddock(['tokens', 'create', '--tenant', 'default', '--role', 'platform'], { dataDir, env });
  expect(created.exitCode, created.stderr).toBe(0);
  return created.stdout.trim();
}

/**
 * Two bindings for the `paddock serve` tests: `echo` (bot `echo`: an echo run) and `held` (bot `held`: a run that waits
 * on the test's rendezvous socket at `socket` until released), both on the process backend, platform `telegram`.
 */
export function echoAndHeldBindings(socket: string): string {
  const waits = `runner: waits-for-go, sandbox: process, config: { socket: ${JSON.stringify(socket)} }`;
  return [
    'bindings:',
    '  - { id: echo, runner: echo, sandbox: process, route: { platform: telegram, bot: echo } }',
    `  - { id: held, ${waits}, route: { platform: telegram, bot: held } }`,
    '',
  ].join('\n');
}
