import { describe, expect, it } from 'vitest';
import { withHeapFigures, type Sample } from '../../campaigns/soak/sample.js';

// The soak judges RSS without V8's young generation (soak.ts, REPORTED): what is taken out is exactly its size.

const bare: Sample = {
  runs: 100,
  fds: 30,
  rssKiB: 150_000,
  rssAnonKiB: 100_000,
  brkKiB: 20_000,
  heapLive: 0,
  heapUsed: 0,
  heapTotal: 0,
  youngGen: 0,
  rssBeyondYoungKiB: 0,
  rssAnonBeyondYoungKiB: 0,
  external: 0,
  zombies: 0,
  children: 3,
  cgroups: 0,
  workspaces: 0,
  mounts: 0,
  dbBytes: 4096,
};

describe('a soak sample with its heap figures', () => {
  it('takes the young generation out of both RSS figures, and keeps RSS whole beside them', () => {
    const heap = { heapLive: 30e6, heapUsed: 40e6, heapTotal: 75e6, youngGen: 32 * 1024 * 1024, external: 3e6 };
    const s = withHeapFigures(bare, heap);
    expect(s).toMatchObject({ ...heap, rssKiB: 150_000, rssAnonKiB: 100_000 });
    expect(s.rssBeyondYoungKiB).toBe(150_000 - 32 * 1024);
    expect(s.rssAnonBeyondYoungKiB).toBe(100_000 - 32 * 1024);
  });
});
