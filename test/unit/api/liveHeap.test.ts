import { PerformanceObserver } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { registerLiveHeap } from '../../../host/api/metrics/liveHeap.js';

/** A full collection on demand (the test worker has no --expose-gc): a real mark-compact, observed like any other. */
function fullGc(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

const liveBytes = async (registry: Registry) =>
  Number(/^paddock_heap_live_bytes (\d+)/m.exec(await registry.metrics())?.[1]);

describe('paddock_heap_live_bytes', () => {
  it('is 0 before a major collection, then the heap in use just after one, under the sampled heap', async () => {
    const registry = new Registry();
    const stop = registerLiveHeap(registry);
    try {
      expect(await liveBytes(registry)).toBe(0);
      // 40 MB of garbage: the heap in use counts it until a collection.
      let garbage: string[] | null = Array.from({ length: 400_000 }, (_, i) => `${i}`.repeat(20));
      garbage = null;
      void garbage;
      const before = process.memoryUsage().heapUsed;
      // Observers are told of a collection in the order they observe: this one, made after the gauge's, is told
      // after it, so once it has heard the collection the gauge has too.
      await new Promise<void>((resolve) => {
        const heard = new PerformanceObserver(() => {
          heard.disconnect();
          resolve();
        });
        heard.observe({ entryTypes: ['gc'] });
        fullGc();
      });
      const live = await liveBytes(registry);
      expect(live).toBeGreaterThan(1_000_000);
      expect(live).toBeLessThan(before - 20_000_000);
    } finally {
      stop();
    }
  });
});
