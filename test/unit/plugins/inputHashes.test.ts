// A runner's build inputs are hashed once and re-read only when their stat changed (host/plugins/inputHashes.ts).
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { InputHashes } from '../../../host/plugins/inputHashes.js';
import { RACY_MS } from '../../../host/util/racyStat.js';
import { readBoundedFile } from '../../../host/util/readBoundedFile.js';

// The real reader, counted: a stat that stands for the content saves exactly this read.
vi.mock('../../../host/util/readBoundedFile.js', async (original) => {
  const real = await original<typeof import('../../../host/util/readBoundedFile.js')>();
  return { ...real, readBoundedFile: vi.fn(real.readBoundedFile) };
});
const reads = () => vi.mocked(readBoundedFile).mock.calls.length;

const sha = (text: string) => createHash('sha256').update(text).digest('hex');
const dirs: string[] = [];
const file = (text: string) => {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-inputhashes-'));
  dirs.push(dir);
  const path = join(dir, 'index.ts');
  writeFileSync(path, text);
  return path;
};
afterEach(() => {
  vi.mocked(readBoundedFile).mockClear();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
/** A clock far enough ahead that every file here is older than the racy window. */
const later = () => Date.now() + 10 * RACY_MS;

describe('InputHashes', () => {
  it('answers by content, and a content that changed with the same size and mtime is seen (ctime moved)', () => {
    const hashes = new InputHashes(later);
    const path = file('AAAA');
    expect(hashes.matches(path, sha('AAAA'))).toBe(true);
    expect(hashes.matches(path, sha('BBBB'))).toBe(false);
    const { atime, mtime } = statSync(path);
    writeFileSync(path, 'BBBB');
    utimesSync(path, atime, mtime);
    expect(hashes.matches(path, sha('AAAA'))).toBe(false);
    expect(hashes.matches(path, sha('BBBB'))).toBe(true);
  });

  it('an unchanged settled file is read once; a file younger than the racy window is read every time', () => {
    const path = file('AAAA');
    const settled = new InputHashes(later);
    expect(settled.matches(path, sha('AAAA'))).toBe(true);
    expect(settled.matches(path, sha('AAAA'))).toBe(true);
    expect(settled.matches(path, sha('BBBB'))).toBe(false); // the kept hash answers, without a read
    expect(reads()).toBe(1);
    const young = new InputHashes(() => Date.now());
    expect(young.matches(path, sha('AAAA'))).toBe(true);
    expect(young.matches(path, sha('AAAA'))).toBe(true);
    expect(reads()).toBe(3);
  });

  it('a FIFO, a folder or a missing file in place of an input does not match (and never blocks)', () => {
    const hashes = new InputHashes(later);
    const path = file('AAAA');
    rmSync(path);
    expect(hashes.matches(path, sha('AAAA'))).toBe(false);
    execFileSync('mkfifo', [path]);
    expect(hashes.matches(path, sha('AAAA'))).toBe(false);
    expect(hashes.matches(join(path, '..'), sha('AAAA'))).toBe(false);
  });
});
