import { mkdtempSync, renameSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FileCache } from '../../../host/plugins/fileCache.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A cache whose loads are counted, over one file in a fresh folder. */
function setup(racyMs?: number) {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-filecache-'));
  dirs.push(dir);
  const file = join(dir, 'runner.json');
  writeFileSync(file, 'v1');
  const cache = new FileCache<string>(racyMs);
  let loads = 0;
  const get = () =>
    cache.get(file, () => {
      loads++;
      return `loaded ${loads}`;
    });
  return { dir, file, get, loads: () => loads };
}

describe('FileCache (parsed runner manifests)', () => {
  it('loads an unchanged file once', () => {
    const t = setup(0);
    expect([t.get(), t.get(), t.get()]).toEqual(['loaded 1', 'loaded 1', 'loaded 1']);
  });

  it('loads again after a write of the same size, and after a rename over the file', () => {
    const t = setup(0);
    // With the racy window off, a write in the clock tick of the load could leave every timestamp equal (what the
    // window is for: the next test). An mtime far in the past makes this write's own mtime differ, whatever the tick.
    utimesSync(t.file, 1_000_000, 1_000_000);
    t.get();
    writeFileSync(t.file, 'v2');
    expect(t.get()).toBe('loaded 2');
    writeFileSync(join(t.dir, 'next'), 'v3');
    renameSync(join(t.dir, 'next'), t.file);
    expect(t.get()).toBe('loaded 3');
  });

  it('does not trust a file changed within the racy window (its timestamps may equal an older version)', () => {
    const t = setup();
    expect([t.get(), t.get()]).toEqual(['loaded 1', 'loaded 2']);
  });

  it('caches neither a load that throws nor a file that is gone', () => {
    const t = setup(0);
    const cache = new FileCache<string>(0);
    expect(() =>
      cache.get(t.file, () => {
        throw new Error('bad');
      }),
    ).toThrow('bad');
    expect(cache.get(t.file, () => 'good')).toBe('good');
    rmSync(t.file);
    expect(cache.get(t.file, () => 'missing')).toBe('missing');
    expect(cache.get(t.file, () => 'missing again')).toBe('missing again');
  });
});
