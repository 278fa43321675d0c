// The reconnect test: a client whose connection is cut at random points reconnects with
// Last-Event-ID 200 times while events keep being committed; together its connections saw every
// stored event exactly once, in order.
import { describe, expect, it } from 'vitest';
import type { NewEvent } from '../../../../host/state/store.js';
import { openSse, type SseMessage } from '../../../helpers/sse.js';
import { streamServer } from '../../../helpers/streamServer.js';
import { tempStore } from '../../../helpers/store.js';

/** A small seeded generator (mulberry32): a failure names its seed and replays. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('SSE reconnects', () => {
  it(
    '200 connections cut at random points, each resumed with Last-Event-ID, ' +
      'while events are appended: every event exactly once, in order',
    async () => {
      const seed = Number(process.env.SSE_SEED ?? Date.now() % 1_000_000);
      const rand = random(seed);
      const { store } = tempStore();
      // A small buffer bound and batch: reconnects also land while a stream waits for 'drain' or between batches.
      const srv = await streamServer(store, { maxBufferedBytes: 64 * 1024, batchSize: 7, heartbeatMs: 3 });
      const sessionId = store.ensureSession('default', 'b', 'reconnects').sessionId;
      let appending = true;
      let n = 0;
      const event = (): NewEvent => {
        n += 1;
        // Mostly small, some large enough to split across TCP reads (a cut then lands inside a message).
        const size = rand() < 0.1 ? 20_000 + Math.floor(rand() * 50_000) : Math.floor(rand() * 200);
        return {
          type: 'run.update',
          runId: 'run_r',
          data: { runnerSeq: n, update: { kind: 'message.delta', text: `${n}:${'z'.repeat(size)}\n\ndata: x` } },
        };
      };
      const appender = (async () => {
        while (appending) {
          const k = 1 + Math.floor(rand() * 4);
          // Sometimes several events in one transaction (one commit, one wake), sometimes one each.
          if (rand() < 0.5) store.transaction(() => store.append(sessionId, Array.from({ length: k }, event)));
          else for (let i = 0; i < k; i++) store.append(sessionId, [event()]);
          await turn();
        }
      })();

      const seen: SseMessage[] = [];
      let last: string | undefined;
      for (let i = 0; i < 200; i++) {
        const c = await openSse(srv.url(`/sessions/${sessionId}/events`), {
          ...(last !== undefined ? { lastEventId: last } : {}),
          onMessage: (m) => seen.push(m),
        });
        expect(c.status).toBe(200);
        // Cut after a random number of event-loop turns (0: at once, before the catch-up is read).
        const turns = Math.floor(rand() ** 2 * 40);
        for (let t = 0; t < turns; t++) await turn();
        c.destroy();
        await c.closed;
        // Only whole messages count: a message cut in half was never dispatched, so it is sent again.
        if (c.messages.length > 0) last = c.messages.at(-1)!.id;
      }
      appending = false;
      await appender;
      const all = store.readEvents(sessionId);
      // Counted before the last connection opens: its messages join `seen` as they arrive.
      const missing = all.length - seen.length;
      const final = await openSse(srv.url(`/sessions/${sessionId}/events`), {
        ...(last !== undefined ? { lastEventId: last } : {}),
        onMessage: (m) => seen.push(m),
      });
      await final.waitForCount(missing);
      final.destroy();
      expect(
        seen.map((m) => Number(m.id)),
        `seed ${seed}`,
      ).toEqual(all.map((e) => e.seq));
      expect(seen.map((m) => JSON.parse(m.data) as unknown)).toEqual(all);
      expect(all.length).toBeGreaterThan(300);
      await srv.settled();
      expect(srv.streams.clients).toBe(0);
      await srv.close();
      store.close();
    },
    120_000,
  );
});
