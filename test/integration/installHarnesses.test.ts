// The harness install's progress (scripts/installHarnesses.ts, run by scripts/install-harnesses.sh; issue 18 item 6),
// with real npm, offline, into a temp prefix: local tarballs stand in for the pinned CLIs.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { repoPath } from '../helpers/fixtures.js';
import { emptyFolder } from '../helpers/packageTree.js';

/** A prefix like .harness/ whose package.json depends on packed local packages (one of 3 MiB that does not shrink). */
function harnessPrefix(dependencies: Record<string, string> = {}): string {
  const tarballs = emptyFolder();
  const deps: Record<string, string> = { ...dependencies };
  for (const [name, bytes] of [
    ['fake-cli', 3 * 1024 * 1024],
    ['fake-adapter', 1000],
    ['fake-helper', 10],
  ] as const) {
    const dir = join(emptyFolder(), name);
    mkdirSync(dir);
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, version: '1.0.0' }));
    writeFileSync(join(dir, 'blob.bin'), randomBytes(bytes));
    execFileSync('npm', ['pack', '--pack-destination', tarballs], { cwd: dir, stdio: 'ignore' });
    deps[name] = `file:${join(tarballs, `${name}-1.0.0.tgz`)}`;
  }
  const prefix = emptyFolder();
  writeFileSync(
    join(prefix, 'package.json'),
    JSON.stringify({ name: 'paddock-harnesses', private: true, dependencies: deps }),
  );
  return prefix;
}

/** The installer as install-harnesses.sh starts it, stderr a pipe (as in CI), npm offline. */
const install = (prefix: string) =>
  execa(process.execPath, ['--import', 'tsx', repoPath('scripts/installHarnesses.ts'), prefix], {
    cwd: repoPath('.'),
    reject: false,
    env: { npm_config_offline: 'true' },
  });

describe('the harness install shows its progress (real npm, offline)', () => {
  it('ends with the packages on disk, the bytes and the time; npm says the rest in install.log', async () => {
    const prefix = harnessPrefix();
    const r = await install(prefix);
    expect(r.exitCode, r.stderr).toBe(0);
    const lines = r.stderr.trim().split('\n');
    expect(lines.at(-1)).toMatch(/^harness: 3 of 3 packages on disk \(3\.0 MiB\) after \d+s$/);
    // Whatever progress came before (the install may take less than the quiet first second): whole lines, each
    // naming its phase, and the counts only in the download phase.
    const counts = String.raw`( \d of 3 packages \(\d+%\), [\d.]+ (B|KiB|MiB) on disk)?`;
    const progress = new RegExp(
      String.raw`^harness: (resolving the pinned versions|downloading and unpacking${counts}), \d+s$`,
    );
    for (const line of lines.slice(0, -1)) expect(line).toMatch(progress);
    expect(r.stdout).toBe('');
    expect(readFileSync(join(prefix, 'install.log'), 'utf8')).toMatch(/added 3 packages/);
    expect(JSON.parse(readFileSync(join(prefix, 'node_modules/fake-cli/package.json'), 'utf8'))).toMatchObject({
      version: '1.0.0',
    });
  });

  it("fails with npm's exit code, its words in install.log, and no summary", async () => {
    const prefix = harnessPrefix({ 'paddock-test-not-in-the-cache': '1.0.0' });
    const r = await install(prefix);
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).not.toMatch(/packages on disk/);
    expect(readFileSync(join(prefix, 'install.log'), 'utf8')).toMatch(/ENOTCACHED|paddock-test-not-in-the-cache/);
  });
});
