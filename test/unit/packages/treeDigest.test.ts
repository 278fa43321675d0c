import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, renameSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { hashFile, readTree } from '../../../host/packages/treeDigest.js';
import { emptyFolder, makeTree } from '../../helpers/packageTree.js';

describe('package tree digest', () => {
  it('is the same for the same tree in another folder, at other times, with other non-exec permission bits', () => {
    const a = makeTree();
    const b = makeTree();
    utimesSync(join(b, 'runner.json'), new Date(2001, 1, 1), new Date(2001, 1, 1));
    chmodSync(join(b, 'runner.json'), 0o600);
    const ta = readTree(a);
    expect(readTree(b).digest).toBe(ta.digest);
    expect(ta.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(ta.entries.map((e) => `${e.type} ${e.path}`)).toEqual([
      'D lib',
      'L lib/a.js',
      'D lib/deep',
      'F lib/deep/a.js',
      'F run.sh',
      'F runner.json',
    ]);
  });

  it.each([
    ['one byte of a file', (r: string) => writeFileSync(join(r, 'lib', 'deep', 'a.js'), 'export const a = 2;\n')],
    ['a file added', (r: string) => writeFileSync(join(r, 'lib', 'new.js'), '')],
    ['an empty folder added', (r: string) => mkdirSync(join(r, 'empty'))],
    ['a file renamed', (r: string) => renameSync(join(r, 'run.sh'), join(r, 'run2.sh'))],
    ['the exec bit dropped', (r: string) => chmodSync(join(r, 'run.sh'), 0o644)],
    ['the exec bit added', (r: string) => chmodSync(join(r, 'runner.json'), 0o755)],
    [
      "a link's target",
      (r: string) => {
        execFileSync('rm', [join(r, 'lib', 'a.js')]);
        symlinkSync('../run.sh', join(r, 'lib', 'a.js'));
      },
    ],
    [
      'a link replaced by the file it pointed to',
      (r: string) => {
        execFileSync('rm', [join(r, 'lib', 'a.js')]);
        writeFileSync(join(r, 'lib', 'a.js'), 'export const a = 1;\n');
      },
    ],
  ])('changes with %s', (_name, change) => {
    const root = makeTree();
    const before = readTree(root).digest;
    change(root);
    expect(readTree(root).digest).not.toBe(before);
  });

  it("tells a folder holding a file from a file of the folder's name", () => {
    const one = emptyFolder();
    mkdirSync(join(one, 'a'));
    writeFileSync(join(one, 'a', 'b'), 'x');
    const two = emptyFolder();
    writeFileSync(join(two, 'a'), 'x');
    expect(readTree(one).digest).not.toBe(readTree(two).digest);
  });

  it('refuses a FIFO anywhere in the tree, naming it', () => {
    const root = makeTree();
    execFileSync('mkfifo', [join(root, 'lib', 'pipe')]);
    expect(() => readTree(root)).toThrow(/lib\/pipe: a package may hold only files, folders and links/);
  });

  it('refuses a file name that is not UTF-8', () => {
    const root = makeTree();
    // A name with the byte 0xff: not UTF-8, so it could not be recorded as text without changing it.
    execFileSync('sh', ['-c', `touch "${root}/$(printf 'bad\\377')"`]);
    expect(() => readTree(root)).toThrow(/a package file name is not UTF-8 \(626164ff\)/);
  });

  it('hashes a file larger than one read piece the same as a whole', () => {
    const root = emptyFolder();
    const big = Buffer.alloc(3 * (1 << 20) + 17, 7);
    writeFileSync(join(root, 'big.bin'), big);
    const entry = readTree(root).entries[0]!;
    const expected = execFileSync('sha256sum', [join(root, 'big.bin')])
      .toString()
      .split(' ')[0];
    expect(entry).toMatchObject({ type: 'F', size: big.length, sha256: expected });
  });

  it('reads each file into one buffer sized to it, at most 1 MiB (not 1 MiB of garbage per small file)', () => {
    const root = emptyFolder();
    writeFileSync(join(root, 'small.js'), 'x'.repeat(10_000));
    writeFileSync(join(root, 'big.bin'), Buffer.alloc(3 * (1 << 20), 7));
    const alloc = vi.spyOn(Buffer, 'allocUnsafe');
    try {
      hashFile(join(root, 'small.js'));
      hashFile(join(root, 'big.bin'));
      expect(alloc.mock.calls.map(([n]) => n)).toEqual([10_001, 1 << 20]);
    } finally {
      alloc.mockRestore();
    }
  });
});

describe('hashFile on an entry swapped after its lstat', () => {
  it('refuses a FIFO with no writer at once instead of blocking, and does not follow a link', () => {
    const root = emptyFolder();
    execFileSync('mkfifo', [join(root, 'p')]);
    expect(() => hashFile(join(root, 'p'))).toThrow(/changed into something not a file/);
    symlinkSync('/etc/passwd', join(root, 'l'));
    expect(() => hashFile(join(root, 'l'))).toThrow(/ELOOP/);
  });
});
