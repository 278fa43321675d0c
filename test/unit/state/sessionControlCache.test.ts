import { describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../../host/state/events.js';
import { SessionControlCache } from '../../../host/state/sessionControlCache.js';

const saved = (sessionId: string, seq: number, external: string): StoredEvent =>
  ({
    id: `evt_${sessionId}_${seq}`,
    sessionId,
    seq,
    type: 'external.saved',
    runId: 'run_1',
    at: '2026-12-02T00:00:00Z',
    data: { external: { sessionId: external } },
  }) as StoredEvent;

describe('session control cache', () => {
  it('reads only what was committed since its last seq, and re-reads a session it dropped for capacity', () => {
    const logs = new Map<string, StoredEvent[]>();
    const reads: [string, number][] = [];
    const cache = new SessionControlCache((id, after) => {
      reads.push([id, after]);
      return (logs.get(id) ?? []).filter((e) => e.seq > after);
    }, 2);
    logs.set('a', [saved('a', 1, 'x1')]);
    logs.set('b', [saved('b', 1, 'y1')]);
    logs.set('c', [saved('c', 1, 'z1')]);
    expect(cache.control('a').external).toEqual({ sessionId: 'x1' });
    logs.get('a')!.push(saved('a', 2, 'x2'));
    expect(cache.control('a').external).toEqual({ sessionId: 'x2' });
    cache.control('b');
    cache.control('c'); // over capacity: 'a', the least recently asked, goes
    expect(cache.size).toBe(2);
    expect(cache.control('a').external).toEqual({ sessionId: 'x2' });
    expect(reads).toEqual([
      ['a', 0],
      ['a', 1],
      ['b', 0],
      ['c', 0],
      ['a', 0],
    ]);
  });
});
