import { chmodSync, mkdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sealTree, treeProblems } from '../../../host/packages/sealTree.js';
import { readTree } from '../../../host/packages/treeDigest.js';
import { checkTree } from '../../../host/packages/verifyTree.js';
import { makeTree, recordedLater } from '../../helpers/packageTree.js';

const mode = (path: string) => (statSync(path).mode & 0o7777).toString(8);

describe('sealing a staged package', () => {
  it('makes every file and folder read-only, keeps the exec bit, and records what a run then checks', () => {
    const root = makeTree();
    const before = readTree(root).digest;
    const sealed = sealTree(root);
    expect(sealed.digest).toBe(before);
    expect([mode(root), mode(join(root, 'lib')), mode(join(root, 'runner.json')), mode(join(root, 'run.sh'))]).toEqual([
      '555',
      '555',
      '444',
      '555',
    ]);
    expect(checkTree(root, recordedLater(sealed))).toEqual({ ok: true, changed: [], rehashed: 0, refreshed: null });
  });

  it.each([
    [
      'an absolute link',
      (r: string) => symlinkSync('/etc/passwd', join(r, 'lib', 'p')),
      'lib/p: a link to "/etc/passwd"',
    ],
    [
      'a link that climbs out',
      (r: string) => symlinkSync('../../..', join(r, 'lib', 'up')),
      'lib/up: a link to "../../.."',
    ],
    ['a link to the parent of the root', (r: string) => symlinkSync('..', join(r, 'out')), 'out: a link to ".."'],
    [
      'a set-uid file',
      (r: string) => chmodSync(join(r, 'run.sh'), 0o4755),
      'run.sh: has a set-id or sticky bit (mode 4755)',
    ],
    [
      'a set-gid folder',
      (r: string) => chmodSync(join(r, 'lib'), 0o2755),
      'lib: has a set-id or sticky bit (mode 2755)',
    ],
  ])('refuses %s, naming it, and leaves the tree as it was', (_name, plant, problem) => {
    const root = makeTree();
    plant(root);
    expect(() => sealTree(root)).toThrow(problem);
    expect(mode(join(root, 'runner.json'))).not.toBe('444');
  });

  it('allows links that stay inside, even through ..', () => {
    const root = makeTree();
    mkdirSync(join(root, 'bin'));
    symlinkSync('../lib/deep/a.js', join(root, 'bin', 'a'));
    writeFileSync(join(root, 'lib', 'deep', 'b.js'), '');
    symlinkSync('./b.js', join(root, 'lib', 'deep', 'c.js'));
    expect(treeProblems(readTree(root))).toEqual([]);
  });

  it('reports every problem at once', () => {
    const root = makeTree();
    symlinkSync('/', join(root, 'root'));
    chmodSync(join(root, 'run.sh'), 0o6755);
    expect(treeProblems(readTree(root))).toHaveLength(2);
  });
});
