import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { BoundedReadError, readBoundedFile } from '../../../host/util/readBoundedFile.js';

const tmp = () => mkdtempSync(join(tmpdir(), 'paddock-bounded-'));
const mkfifo = (path: string) => execFileSync('mkfifo', [path]);
const refusal = (fn: () => unknown): string => {
  try {
    fn();
  } catch (error) {
    if (error instanceof BoundedReadError) return error.message;
    throw error;
  }
  throw new Error('expected a BoundedReadError');
};

describe('readBoundedFile: a file from an untrusted folder cannot stall or exhaust the host', () => {
  it('refuses a FIFO without blocking on its open, with or without a link to it', () => {
    const dir = tmp();
    mkfifo(join(dir, 'fifo'));
    symlinkSync(join(dir, 'fifo'), join(dir, 'link'));
    expect(refusal(() => readBoundedFile(join(dir, 'fifo'), { maxBytes: 10 }))).toBe('is not a regular file (a FIFO)');
    expect(refusal(() => readBoundedFile(join(dir, 'link'), { followLinks: true }))).toBe(
      'is not a regular file (a FIFO)',
    );
  });

  it('refuses devices, folders and sockets, and a link at the end unless links are followed', async () => {
    const dir = tmp();
    symlinkSync('/dev/zero', join(dir, 'zero'));
    mkdirSync(join(dir, 'folder'));
    expect(refusal(() => readBoundedFile(join(dir, 'zero'), { maxBytes: 10 }))).toMatch(/symbolic link/);
    expect(refusal(() => readBoundedFile(join(dir, 'zero'), { followLinks: true }))).toBe(
      'is not a regular file (a character device)',
    );
    expect(refusal(() => readBoundedFile('/dev/urandom'))).toMatch(/character device/);
    expect(refusal(() => readBoundedFile(join(dir, 'folder')))).toMatch(/a folder/);
    const server = createServer();
    await new Promise<void>((done) => server.listen(join(dir, 'sock'), done));
    try {
      // A socket cannot be open()ed (ENXIO): refused by the open itself, never read.
      expect(() => readBoundedFile(join(dir, 'sock'))).toThrow();
    } finally {
      server.close();
    }
  });

  it('reads a file at the cap, refuses one byte more; a link to a regular file only when links are followed', () => {
    const dir = tmp();
    writeFileSync(join(dir, 'at'), 'x'.repeat(64));
    writeFileSync(join(dir, 'over'), 'x'.repeat(65));
    symlinkSync(join(dir, 'at'), join(dir, 'link'));
    expect(readBoundedFile(join(dir, 'at'), { maxBytes: 64 }).length).toBe(64);
    expect(refusal(() => readBoundedFile(join(dir, 'over'), { maxBytes: 64 }))).toBe(
      'is 65 bytes, more than the limit of 64',
    );
    expect(refusal(() => readBoundedFile(join(dir, 'link'), { maxBytes: 64 }))).toMatch(/symbolic link/);
    expect(readBoundedFile(join(dir, 'link'), { maxBytes: 64, followLinks: true }).toString()).toBe('x'.repeat(64));
    expect(readBoundedFile(join(dir, 'at')).length).toBe(64); // no cap: the whole file
  });

  it('a file that says it is small but reads longer (procfs) is cut at the cap and refused', () => {
    // /proc files report size 0 and then yield bytes: the read loop, not fstat, must hold the cap.
    expect(refusal(() => readBoundedFile('/proc/self/maps', { maxBytes: 16, followLinks: true }))).toBe(
      'grew past the limit of 16 bytes while being read',
    );
  });

  it("reads a small file into buffers sized to it, not 1 MiB each (garbage that grew a long-lived host's heap)", () => {
    const dir = tmp();
    writeFileSync(join(dir, 'small'), 'x'.repeat(10_000));
    const alloc = vi.spyOn(Buffer, 'allocUnsafe');
    try {
      expect(readBoundedFile(join(dir, 'small')).toString()).toBe('x'.repeat(10_000));
      expect(readBoundedFile(join(dir, 'small'), { maxBytes: 1 << 20 }).toString()).toBe('x'.repeat(10_000));
      const sizes = alloc.mock.calls.map(([n]) => n);
      expect(sizes.length).toBeGreaterThan(0);
      expect(Math.max(...sizes)).toBeLessThanOrEqual(10_001);
    } finally {
      alloc.mockRestore();
    }
  });

  it('reads a file longer than fstat says (procfs) to its end in growing pieces when there is no cap', () => {
    // /proc/kallsyms: several MB, stable, and size 0 to fstat — every piece after the first is past what was promised.
    const whole = readFileSync('/proc/kallsyms');
    expect(whole.length).toBeGreaterThan(2 << 20);
    const alloc = vi.spyOn(Buffer, 'allocUnsafe');
    try {
      expect(readBoundedFile('/proc/kallsyms').equals(whole)).toBe(true);
      // The pieces (the last call is Buffer.concat's): 4 KiB first, then doubling, never past 1 MiB.
      const pieces = alloc.mock.calls.map(([n]) => n).slice(0, -1);
      expect(pieces.slice(0, 3)).toEqual([4096, 4096, 8192]);
      expect(Math.max(...pieces)).toBe(1 << 20);
    } finally {
      alloc.mockRestore();
    }
  });
});
