import { linkSync, mkdirSync, mkdtempSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PathPolicyError, readInside, writeInside } from '../../../host/policy/paths.js';

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

const codeOf = (fn: () => unknown) => {
  try {
    fn();
    return 'ok';
  } catch (error) {
    return error instanceof PathPolicyError ? error.code : String(error);
  }
};

describe('path policy (host-side file operations on runner-named paths)', () => {
  it('reads and writes inside the workspace', () => {
    const { ws } = setup();
    expect(readInside(ws, 'in/ok.txt', 100).content.toString()).toBe('hello');
    expect(writeInside(ws, 'out/deep/new.txt', Buffer.from('x'), 'create')).toBe(1);
    expect(readFileSync(join(ws, 'out/deep/new.txt'), 'utf8')).toBe('x');
    expect(writeInside(ws, 'out/deep/new.txt', Buffer.from('yz'), 'append')).toBe(2);
    expect(readInside(ws, 'out/deep/new.txt', 1)).toMatchObject({ size: 3, truncated: true });
    expect(codeOf(() => writeInside(ws, 'out/deep/new.txt', Buffer.from('again'), 'create'))).toBe('EXISTS');
  });

  it('refuses absolute paths, "..", NUL and empty paths', () => {
    const { ws, outside } = setup();
    expect(codeOf(() => readInside(ws, join(outside, 'secret.txt'), 100))).toBe('OUTSIDE');
    expect(codeOf(() => readInside(ws, '../outside/secret.txt', 100))).toBe('OUTSIDE');
    expect(codeOf(() => readInside(ws, 'in/../../outside/secret.txt', 100))).toBe('OUTSIDE');
    expect(codeOf(() => writeInside(ws, 'a\0b', Buffer.from(''), 'overwrite'))).toBe('INVALID');
    expect(codeOf(() => readInside(ws, './', 100))).toBe('INVALID');
  });

  it('never follows a symlink planted in the workspace, as the file or as any directory on the way', () => {
    const { ws, outside } = setup();
    symlinkSync(join(outside, 'secret.txt'), join(ws, 'in', 'leak'));
    symlinkSync(outside, join(ws, 'in', 'dir-leak'));
    expect(codeOf(() => readInside(ws, 'in/leak', 100))).toBe('SYMLINK');
    expect(codeOf(() => readInside(ws, 'in/dir-leak/secret.txt', 100))).toBe('SYMLINK');
    expect(codeOf(() => writeInside(ws, 'in/leak', Buffer.from('pwned'), 'overwrite'))).toBe('SYMLINK');
    expect(codeOf(() => writeInside(ws, 'in/dir-leak/new.txt', Buffer.from('pwned'), 'create'))).toBe('SYMLINK');
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('TOP-SECRET');
  });

  it('refuses a hard link (it may be a host file) and never truncates the wrong file', () => {
    const { ws, outside } = setup();
    linkSync(join(outside, 'secret.txt'), join(ws, 'in', 'hard'));
    expect(codeOf(() => readInside(ws, 'in/hard', 100))).toBe('HARDLINK');
    expect(codeOf(() => writeInside(ws, 'in/hard', Buffer.from(''), 'overwrite'))).toBe('HARDLINK');
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('TOP-SECRET');
  });

  it('a directory replaced by a link between two operations is caught on the next one', () => {
    const { ws, outside } = setup();
    // Each operation re-walks with lstat; a swap inside one operation (between the walk and the
    // open) is caught by checking the opened descriptor's real path (/proc/self/fd), which this
    // test cannot time deterministically.
    mkdirSync(join(ws, 'in', 'swap'));
    writeFileSync(join(ws, 'in', 'swap', 'secret.txt'), 'fine');
    expect(readInside(ws, 'in/swap/secret.txt', 100).content.toString()).toBe('fine');
    renameSync(join(ws, 'in', 'swap'), join(ws, 'in', 'swap-old'));
    symlinkSync(outside, join(ws, 'in', 'swap'));
    expect(codeOf(() => readInside(ws, 'in/swap/secret.txt', 100))).toBe('SYMLINK');
  });

  it('.git/hooks and .git/config are never writable', () => {
    const { ws } = setup();
    for (const path of ['.git/hooks/pre-commit', 'repo/.git/hooks/post-checkout', 'repo/.git/config', '.git/config']) {
      expect(codeOf(() => writeInside(ws, path, Buffer.from('#!/bin/sh\ncurl evil'), 'overwrite')), path).toBe('PROTECTED');
    }
    expect(writeInside(ws, 'repo/.git/HEAD', Buffer.from('ref: refs/heads/main\n'), 'overwrite')).toBeGreaterThan(0);
  });
});
