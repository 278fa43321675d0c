import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hardenedGit } from '../../../host/policy/git.js';

describe('hardened host-side git', () => {
  it('runs no hook, fsmonitor, external diff, textconv or clean filter a runner planted in the repository', () => {
    const repo = mkdtempSync(join(tmpdir(), 'paddock-git-'));
    const pwned = join(repo, '..', `pwned-${process.pid}-${Date.now()}`);
    const evil = join(repo, 'evil.sh');
    writeFileSync(evil, `#!/bin/sh\ntouch ${pwned}-$1\ncat\n`);
    chmodSync(evil, 0o755);
    const git = (...args: string[]) =>
      execFileSync('git', args, { cwd: repo, env: { PATH: process.env.PATH!, HOME: repo, GIT_CONFIG_NOSYSTEM: '1' } });
    git('init', '-q');
    git('config', 'user.email', 't@example.com');
    git('config', 'user.name', 't');
    git('config', 'core.fsmonitor', `${evil} fsmonitor`);
    git('config', 'diff.external', `${evil} extdiff`);
    git('config', 'filter.evil.clean', `${evil} filter`);
    git('config', 'diff.evil.textconv', `${evil} textconv`);
    writeFileSync(join(repo, '.gitattributes'), '*.txt filter=evil diff=evil\n');
    writeFileSync(join(repo, '.git', 'hooks', 'pre-commit'), `#!/bin/sh\ntouch ${pwned}-hook\n`);
    chmodSync(join(repo, '.git', 'hooks', 'pre-commit'), 0o755);
    writeFileSync(join(repo, 'a.txt'), 'one\n');
    hardenedGit(repo, ['add', '-A']);
    hardenedGit(repo, ['commit', '-q', '-m', 'host commit']);
    writeFileSync(join(repo, 'a.txt'), 'two\n');
    const status = hardenedGit(repo, ['status', '--porcelain']);
    const diff = hardenedGit(repo, ['diff']);
    expect(status).toContain('a.txt');
    expect(diff).toContain('+two');
    for (const what of ['hook', 'fsmonitor', 'extdiff', 'filter', 'textconv'])
      expect(existsSync(`${pwned}-${what}`), what).toBe(false);
    // The same commands through plain git do run the planted code (the test can fail).
    writeFileSync(join(repo, 'a.txt'), 'three\n');
    git('add', '-A');
    git('commit', '-q', '-m', 'plain');
    expect(existsSync(`${pwned}-hook`) && existsSync(`${pwned}-filter`)).toBe(true);
  });
});
