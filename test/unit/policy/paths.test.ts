import { execFileSync } from 'node:child_process';
import {
  constants,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { open } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PathPolicyError, readInside, walkBeneath, writeInside } from '../../../host/policy/paths.js';

function setup() {
  const base = mkdtempSync(join(tmpdir(), 'paddock-paths-'));
  const ws = join(base, 'ws');
  const outside = join(base, 'outside');
  mkdirSync(join(ws, 'in'), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(outside, 'secret.txt'), 'TOP-SECRET');
  writeFileSync(join(ws, 'in', 'ok.txt'), 'hello');
  return { ws, outside };
}

const codeOf = async (fn: () => Promise<unknown>) => {
  try {
    await fn();
    return 'ok';
  } catch (error) {
    return error instanceof PathPolicyError ? error.code : String(error);
  }
};

describe('path policy (host-side file operations on runner-named paths)', () => {
  it('a write hands over what the file held, read from the very inode it writes, before any byte changes', async () => {
    const { ws } = setup();
    const seen: unknown[] = [];
    const before = (readUpTo = 100) => ({ readUpTo, found: (p: unknown) => void seen.push(p) });
    await writeInside(ws, 'out/new.txt', Buffer.from('abc'), 'create', before());
    await writeInside(ws, 'out/new.txt', Buffer.from('de'), 'append', before());
    await writeInside(ws, 'out/new.txt', Buffer.from('z'), 'overwrite', before(3));
    expect(seen).toEqual([undefined, { size: 3, bytes: Buffer.from('abc') }, { size: 5 }]);
    expect(readFileSync(join(ws, 'out/new.txt'), 'utf8')).toBe('z');
    // A refused write (a link) hands nothing over.
    symlinkSync(join(ws, 'in/ok.txt'), join(ws, 'in/link'));
    expect(await codeOf(async () => writeInside(ws, 'in/link', Buffer.from('x'), 'overwrite', before()))).toBe(
      'SYMLINK',
    );
    expect(seen).toHaveLength(3);
  });

  it('reads and writes inside the workspace', async () => {
    const { ws } = setup();
    expect((await readInside(ws, 'in/ok.txt', 100)).content.toString()).toBe('hello');
    expect(await writeInside(ws, 'out/deep/new.txt', Buffer.from('x'), 'create')).toBe(1);
    expect(readFileSync(join(ws, 'out/deep/new.txt'), 'utf8')).toBe('x');
    expect(await writeInside(ws, 'out/deep/new.txt', Buffer.from('yz'), 'append')).toBe(2);
    expect(await readInside(ws, 'out/deep/new.txt', 1)).toMatchObject({ size: 3, truncated: true });
    expect(await codeOf(async () => writeInside(ws, 'out/deep/new.txt', Buffer.from('again'), 'create'))).toBe(
      'EXISTS',
    );
  });

  it('refuses absolute paths, "..", NUL and empty paths', async () => {
    const { ws, outside } = setup();
    expect(await codeOf(async () => readInside(ws, join(outside, 'secret.txt'), 100))).toBe('OUTSIDE');
    expect(await codeOf(async () => readInside(ws, '../outside/secret.txt', 100))).toBe('OUTSIDE');
    expect(await codeOf(async () => readInside(ws, 'in/../../outside/secret.txt', 100))).toBe('OUTSIDE');
    expect(await codeOf(async () => writeInside(ws, 'a\0b', Buffer.from(''), 'overwrite'))).toBe('INVALID');
    expect(await codeOf(async () => readInside(ws, './', 100))).toBe('INVALID');
  });

  it('never follows a symlink planted in the workspace, as the file or as any directory on the way', async () => {
    const { ws, outside } = setup();
    symlinkSync(join(outside, 'secret.txt'), join(ws, 'in', 'leak'));
    symlinkSync(outside, join(ws, 'in', 'dir-leak'));
    expect(await codeOf(async () => readInside(ws, 'in/leak', 100))).toBe('SYMLINK');
    expect(await codeOf(async () => readInside(ws, 'in/dir-leak/secret.txt', 100))).toBe('SYMLINK');
    expect(await codeOf(async () => writeInside(ws, 'in/leak', Buffer.from('pwned'), 'overwrite'))).toBe('SYMLINK');
    expect(await codeOf(async () => writeInside(ws, 'in/dir-leak/new.txt', Buffer.from('pwned'), 'create'))).toBe(
      'SYMLINK',
    );
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('TOP-SECRET');
  });

  it('refuses a hard link (it may be a host file) and never truncates the wrong file', async () => {
    const { ws, outside } = setup();
    linkSync(join(outside, 'secret.txt'), join(ws, 'in', 'hard'));
    expect(await codeOf(async () => readInside(ws, 'in/hard', 100))).toBe('HARDLINK');
    expect(await codeOf(async () => writeInside(ws, 'in/hard', Buffer.from(''), 'overwrite'))).toBe('HARDLINK');
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('TOP-SECRET');
  });

  it('a directory replaced by a link between two operations is caught on the next one', async () => {
    const { ws, outside } = setup();
    // Each operation re-walks beneath held descriptors; a swap inside one operation is covered by
    // the race test (test/integration/fsSwapRace.test.ts) and the walker tests below.
    mkdirSync(join(ws, 'in', 'swap'));
    writeFileSync(join(ws, 'in', 'swap', 'secret.txt'), 'fine');
    expect((await readInside(ws, 'in/swap/secret.txt', 100)).content.toString()).toBe('fine');
    renameSync(join(ws, 'in', 'swap'), join(ws, 'in', 'swap-old'));
    symlinkSync(outside, join(ws, 'in', 'swap'));
    expect(await codeOf(async () => readInside(ws, 'in/swap/secret.txt', 100))).toBe('SYMLINK');
  });

  it('.git/hooks and .git/config are never writable', async () => {
    const { ws } = setup();
    for (const path of ['.git/hooks/pre-commit', 'repo/.git/hooks/post-checkout', 'repo/.git/config', '.git/config']) {
      expect(
        await codeOf(async () => writeInside(ws, path, Buffer.from('#!/bin/sh\ncurl evil'), 'overwrite')),
        path,
      ).toBe('PROTECTED');
    }
    expect(await writeInside(ws, 'repo/.git/HEAD', Buffer.from('ref: refs/heads/main\n'), 'overwrite')).toBeGreaterThan(
      0,
    );
  });
});

describe('the walk beneath held descriptors (issue 11, item 7)', () => {
  it('refuses a link planted at every depth, for read, overwrite and create, and creates nothing outside', async () => {
    const components = ['a', 'b', 'c'];
    for (let depth = 0; depth <= components.length; depth++) {
      const { ws, outside } = setup();
      // Real directories down to `depth`, then a link to the outside in place of the next component (or the file).
      let dir = ws;
      for (const part of components.slice(0, depth)) {
        dir = join(dir, part);
        mkdirSync(dir);
      }
      const linkName = depth < components.length ? components[depth]! : 'f';
      symlinkSync(depth < components.length ? outside : join(outside, 'secret.txt'), join(dir, linkName));
      const path = [...components, 'f'].join('/');
      expect(await codeOf(async () => readInside(ws, path, 100)), `read, link at depth ${depth}`).toBe('SYMLINK');
      for (const mode of ['create', 'overwrite', 'append'] as const) {
        expect(
          await codeOf(async () => writeInside(ws, path, Buffer.from('pwned'), mode)),
          `${mode}, link at depth ${depth}`,
        ).toBe('SYMLINK');
      }
      expect(readdirSync(outside)).toEqual(['secret.txt']);
      expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('TOP-SECRET');
    }
  });

  it(
    'a directory swapped for a link after it was opened: the held descriptor still points inside, nothing lands ' +
      'outside',
    async () => {
      const { ws, outside } = setup();
      mkdirSync(join(ws, 'd'));
      const root = await open(ws, constants.O_RDONLY | constants.O_DIRECTORY);
      const d = await walkBeneath(root, ['d'], false);
      // The runner's swap, between two steps of one walk.
      renameSync(join(ws, 'd'), join(ws, 'd-moved'));
      symlinkSync(outside, join(ws, 'd'));
      const deeper = await walkBeneath(d, ['s1', 's2'], true);
      await deeper.close();
      await d.close();
      await root.close();
      expect(readdirSync(outside)).toEqual(['secret.txt']);
      expect(lstatSync(join(ws, 'd-moved', 's1', 's2')).isDirectory()).toBe(true);
      // A new operation sees the link and refuses it.
      expect(await codeOf(async () => writeInside(ws, 'd/s1/x', Buffer.from('x'), 'create'))).toBe('SYMLINK');
    },
  );

  it('refuses FIFOs (with and without a reader), sockets and devices without opening them', async () => {
    const { ws } = setup();
    execFileSync('mkfifo', [join(ws, 'in', 'fifo')]);
    execFileSync('mknod', [join(ws, 'in', 'null'), 'c', '1', '3']);
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(join(ws, 'in', 'sock'), resolve));
    try {
      const expectRefused = async (name: string, kind: string) => {
        for (const fn of [
          () => readInside(ws, `in/${name}`, 100),
          () => writeInside(ws, `in/${name}`, Buffer.from('x'), 'overwrite'),
          () => writeInside(ws, `in/${name}`, Buffer.from('x'), 'append'),
        ]) {
          const error = await fn().then(
            () => undefined,
            (e: unknown) => e,
          );
          expect(error, name).toBeInstanceOf(PathPolicyError);
          expect((error as PathPolicyError).code).toBe('NOT_FILE');
          expect((error as PathPolicyError).message).toBe(
            `in/${name} is ${kind}, not a regular file; only regular files are read or written`,
          );
        }
        expect(await codeOf(async () => writeInside(ws, `in/${name}`, Buffer.from('x'), 'create'))).toBe('EXISTS');
      };
      await expectRefused('fifo', 'a FIFO (named pipe)');
      await expectRefused('sock', 'a socket');
      await expectRefused('null', 'a character device');
      // A reader on the FIFO (the case where a non-blocking open would succeed): still refused.
      const reader = await open(join(ws, 'in', 'fifo'), constants.O_RDONLY | constants.O_NONBLOCK);
      try {
        await expectRefused('fifo', 'a FIFO (named pipe)');
      } finally {
        await reader.close();
      }
      // A link to a device is a link: refused before anything is looked at.
      symlinkSync('/dev/zero', join(ws, 'in', 'zero'));
      expect(await codeOf(async () => readInside(ws, 'in/zero', 100))).toBe('SYMLINK');
      expect(await codeOf(async () => writeInside(ws, 'in/zero', Buffer.from('x'), 'overwrite'))).toBe('SYMLINK');
      // A FIFO as a directory on the way is named for what it is.
      await expect(writeInside(ws, 'in/fifo/x', Buffer.from('x'), 'create')).rejects.toThrow(
        'in/fifo is a FIFO (named pipe), not a directory',
      );
    } finally {
      server.close();
    }
  });

  it('reads a huge sparse file only up to the cap', async () => {
    const { ws } = setup();
    const huge = join(ws, 'in', 'sparse');
    writeFileSync(huge, '');
    truncateSync(huge, 64 * 1024 ** 3);
    const { content, size, truncated } = await readInside(ws, 'in/sparse', 1024 * 1024);
    expect({ length: content.length, size, truncated }).toEqual({
      length: 1024 * 1024,
      size: 64 * 1024 ** 3,
      truncated: true,
    });
  });
});
