import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readTree } from '../../../host/packages/treeDigest.js';
import { checkTree, fingerprintsUnmoved } from '../../../host/packages/verifyTree.js';
import { makeTree, recordedLater } from '../../helpers/packageTree.js';

describe('fingerprintsUnmoved (the per-run fast path, on number stats)', () => {
  it("holds for an untouched tree: the recorded nanoseconds give Node's own milliseconds, entry by entry", () => {
    const root = makeTree();
    // Times with nanoseconds the coarse clock never gives (a file system's tick is milliseconds): for such times
    // `Number(ns) / 1e6` and Node's `sec * 1e3 + nsec / 1e6` differ about one time in four.
    const files = ['runner.json', 'run.sh', 'lib/deep/a.js', 'lib/deep', 'lib'];
    files.forEach((path, i) => utimesSync(join(root, path), 1_764_670_000 + (i + 1) / 3, 1_764_671_234 + (i + 1) / 7));
    expect(fingerprintsUnmoved(root, recordedLater(readTree(root)))).toBe(true);
  });

  it('fails on each kind of change, however small: bytes with size and mtime put back, a mode, a replacement', () => {
    const cases: [string, (root: string) => void][] = [
      [
        'same size, mtime restored',
        (root) => {
          const file = join(root, 'runner.json');
          const before = statSync(file);
          const text = readFileSync(file, 'utf8');
          writeFileSync(
            file,
            text.replace(/.$/s, (c) => (c === ' ' ? '\t' : ' ')),
          );
          utimesSync(file, before.atime, before.mtime);
        },
      ],
      ['mode', (root) => chmodSync(join(root, 'runner.json'), 0o755)],
      [
        'replaced by a copy',
        (root) => {
          writeFileSync(join(root, 'copy'), readFileSync(join(root, 'runner.json')));
          renameSync(join(root, 'copy'), join(root, 'runner.json'));
        },
      ],
    ];
    for (const [name, change] of cases) {
      const root = makeTree();
      const listing = recordedLater(readTree(root));
      change(root);
      expect(fingerprintsUnmoved(root, listing), name).toBe(false);
    }
  });
});

describe('checkTree (the per-run package check)', () => {
  it('passes an untouched tree without hashing anything', () => {
    const root = makeTree();
    const listing = recordedLater(readTree(root));
    expect(checkTree(root, listing)).toEqual({ ok: true, changed: [], rehashed: 0, refreshed: null });
  });

  it('re-hashes a touched file, passes it, and hands back fingerprints that make the next check hash nothing', () => {
    const root = makeTree();
    const listing = recordedLater(readTree(root));
    utimesSync(join(root, 'runner.json'), new Date(), new Date());
    const first = checkTree(root, listing);
    expect(first).toMatchObject({ ok: true, changed: [], rehashed: 1 });
    expect(first.refreshed?.digest).toBe(listing.digest);
    const next = recordedLater(first.refreshed!);
    expect(checkTree(root, next)).toEqual({ ok: true, changed: [], rehashed: 0, refreshed: null });
  });

  it("does not trust a fingerprint recorded in its entry's last change's clock tick (git's racy clean)", () => {
    const root = makeTree();
    const listing = readTree(root);
    // Forged: the record says runner.json had other bytes under the very stat it has now — what a write landing in
    // the same coarse ctime tick as the recording would leave. Recorded at once, the stat proves nothing: re-hashed.
    const forged = {
      ...listing,
      entries: listing.entries.map((e) => (e.path === 'runner.json' ? { ...e, sha256: '0'.repeat(64) } : e)),
    };
    expect(checkTree(root, forged)).toMatchObject({ ok: false, changed: ['runner.json'] });
    // The same record made long after the change is trusted by its stat: the rule above is what catches it.
    expect(checkTree(root, recordedLater(forged))).toMatchObject({ ok: true, rehashed: 0 });
    // And a fresh record's racy entries are compared by content, not reported.
    expect(checkTree(root, listing)).toMatchObject({ ok: true, changed: [], rehashed: 3 });
  });

  it('finds one byte changed in place with the size and the mtime put back (the ctime moved)', () => {
    const root = makeTree();
    const file = join(root, 'lib', 'deep', 'a.js');
    const listing = readTree(root);
    const { atime, mtime } = statSync(file);
    writeFileSync(file, 'export const a = 9;\n');
    utimesSync(file, atime, mtime);
    expect(checkTree(root, listing)).toMatchObject({ ok: false, changed: ['lib/deep/a.js'] });
  });

  it.each([
    [
      'a file added in a nested folder',
      (r: string) => writeFileSync(join(r, 'lib', 'deep', 'b.js'), ''),
      ['lib/deep/b.js'],
    ],
    ['a file added at the root', (r: string) => writeFileSync(join(r, 'preload.js'), ''), ['preload.js']],
    ['a file removed', (r: string) => rmSync(join(r, 'run.sh')), ['run.sh']],
    ['a file renamed', (r: string) => renameSync(join(r, 'run.sh'), join(r, 'run2.sh')), ['run.sh', 'run2.sh']],
    ['the exec bit added', (r: string) => chmodSync(join(r, 'runner.json'), 0o755), ['runner.json']],
    [
      'a folder replaced by a link to a copy',
      (r: string) => {
        execFileSync('cp', ['-a', join(r, 'lib'), join(r, '..', `${r.split('/').pop()}-copy`)]);
        rmSync(join(r, 'lib'), { recursive: true });
        symlinkSync(join(r, '..', `${r.split('/').pop()}-copy`), join(r, 'lib'));
      },
      // The entries below resolve through the link to equal copies: the folder's own type change is the finding.
      ['lib'],
    ],
    [
      "a link's target",
      (r: string) => {
        rmSync(join(r, 'lib', 'a.js'));
        symlinkSync('/etc/passwd', join(r, 'lib', 'a.js'));
      },
      ['lib/a.js'],
    ],
    [
      'a file swapped for another of the same size and times',
      (r: string) => {
        const file = join(r, 'runner.json');
        const { atime, mtime } = statSync(file);
        writeFileSync(join(r, 'x'), '{"id":"u"}');
        utimesSync(join(r, 'x'), atime, mtime);
        renameSync(join(r, 'x'), file);
      },
      ['runner.json'],
    ],
    ['a FIFO added', (r: string) => execFileSync('mkfifo', [join(r, 'lib', 'p')]), ['lib/p']],
  ])('finds %s', (_name, change, paths) => {
    const root = makeTree();
    const listing = readTree(root);
    change(root);
    const check = checkTree(root, listing);
    expect(check.ok).toBe(false);
    expect(check.changed).toEqual(paths);
    expect(check.refreshed).toBeNull();
    rmSync(`${root}-copy`, { recursive: true, force: true });
  });

  it('says the whole tree changed when its folder is gone', () => {
    const root = makeTree();
    const listing = readTree(root);
    rmSync(root, { recursive: true });
    expect(checkTree(root, listing)).toMatchObject({ ok: false, changed: ['.'] });
  });

  it('re-hashes every file when asked for a full check', () => {
    const root = makeTree();
    expect(checkTree(root, readTree(root), { full: true })).toMatchObject({ ok: true, rehashed: 3 });
  });

  it('agrees with a fresh digest on random edits of a bigger tree', () => {
    // Seeded: each round edits, adds, removes or chmods a random entry, then checks against the first listing.
    let seed = 16180;
    const next = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    for (let round = 0; round < 25; round++) {
      const root = makeTree();
      for (let i = 0; i < 30; i++) writeFileSync(join(root, 'lib', `f${i}.js`), `// ${i}\n`);
      const listing = readTree(root);
      const kind = next(5);
      const target = join(root, 'lib', `f${next(30)}.js`);
      if (kind === 0) writeFileSync(target, `// ${next(1000)}\n`);
      else if (kind === 1) writeFileSync(join(root, 'lib', 'deep', `n${next(9)}`), '');
      else if (kind === 2) rmSync(target);
      else if (kind === 3) chmodSync(target, 0o700);
      else utimesSync(target, new Date(), new Date());
      const check = checkTree(root, listing);
      expect(check.ok).toBe(readTree(root).digest === listing.digest);
      if (kind === 1) mkdirSync(join(root, 'unused'), { recursive: true });
    }
  });
});

describe('checkTree against a package that races it', () => {
  it('does not hang on a file swapped for a FIFO with no writer: the entry is reported changed', async () => {
    const root = makeTree();
    const listing = readTree(root);
    const file = join(root, 'lib', 'deep', 'a.js');
    rmSync(file);
    execFileSync('mkfifo', [file]);
    // A blocking open of this FIFO would never return; the check must answer at once.
    expect(checkTree(root, listing)).toMatchObject({ ok: false, changed: ['lib/deep/a.js'] });
  });
});
