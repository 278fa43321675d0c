// Properties of appends on both stores (issue 17: "the property tests on both"): for any sequence of batches —
// each of any size (across the 32-row inserts), over any number of sessions (across the 32-session seq reads),
// committed, rolled back whole, or with a rolled-back savepoint inside — every session's seqs are gap-free from 1,
// each session's events are in the order appended, and listeners heard exactly the committed events, in commit order.
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../../host/state/events.js';
import type { SessionEvent, Store } from '../../../host/state/store.js';
import { postgresBackend, sqliteBackend, type StoreBackend } from '../../helpers/storeBackends.js';

interface Batch {
  /** Session index of each event, in order. */
  sessions: number[];
  outcome: 'commit' | 'rollback' | 'savepoint';
}

const SESSIONS = 40;
const batchArb: fc.Arbitrary<Batch> = fc.record({
  sessions: fc.oneof(
    fc.array(fc.nat(3), { minLength: 1, maxLength: 80 }),
    fc.array(fc.nat(SESSIONS - 1), { minLength: 1, maxLength: 80 }),
  ),
  outcome: fc.constantFrom<Batch['outcome']>('commit', 'commit', 'rollback', 'savepoint'),
});

for (const backend of [sqliteBackend(), postgresBackend()] as StoreBackend[]) {
  describe(`appends under random batches: ${backend.name}`, () => {
    let store: Store;
    afterAll(() => backend.close());

    it('keep seqs gap-free per session and tell listeners exactly the committed events', () => {
      store = backend.open(backend.fresh());
      let round = 0;
      fc.assert(
        fc.property(fc.array(batchArb, { minLength: 1, maxLength: 8 }), (batches) => {
          round += 1;
          const ids = Array.from({ length: SESSIONS }, (_, i) => store.ensureSession('default', 'b', `r${round}-${i}`));
          const expected = ids.map(() => [] as string[]);
          const heard: string[] = [];
          const unsubscribe = store.subscribe((e) => {
            if (e.type === 'run.update') heard.push((e as StoredEvent<'run.update'>).data.update.text as string);
          });
          const committedOrder: string[] = [];
          let mark = 0;
          const items = (sessions: number[]): SessionEvent[] =>
            sessions.map((s) => {
              mark += 1;
              return {
                sessionId: ids[s]!.sessionId,
                event: {
                  type: 'run.update',
                  runId: 'run_p',
                  data: { runnerSeq: mark, update: { kind: 'message.delta', text: `${s}:${mark}` } },
                },
              };
            });
          try {
            for (const batch of batches) {
              const list = items(batch.sessions);
              const texts = list.map((i) => (i.event.data as { update: { text: string } }).update.text);
              if (batch.outcome === 'rollback') {
                expect(() =>
                  store.transaction(() => {
                    store.appendMany(list);
                    throw new Error('rolled back');
                  }),
                ).toThrow('rolled back');
              } else if (batch.outcome === 'savepoint') {
                // The first half commits; the second half is appended in a savepoint that rolls back.
                const half = Math.ceil(list.length / 2);
                store.transaction(() => {
                  store.appendMany(list.slice(0, half));
                  expect(() =>
                    store.transaction(() => {
                      store.appendMany(list.slice(half));
                      throw new Error('inner');
                    }),
                  ).toThrow('inner');
                });
                committedOrder.push(...texts.slice(0, half));
                list.slice(0, half).forEach((_, j) => expected[batch.sessions[j]!]!.push(texts[j]!));
              } else {
                store.appendMany(list);
                committedOrder.push(...texts);
                batch.sessions.forEach((s, j) => expected[s]!.push(texts[j]!));
              }
            }
          } finally {
            unsubscribe();
          }
          expect(heard).toEqual(committedOrder);
          ids.forEach(({ sessionId }, s) => {
            const events = store.readEvents(sessionId);
            expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
            expect(
              events.slice(1).map((e) => (e as StoredEvent<'run.update'>).data.update.text),
              `session ${s}`,
            ).toEqual(expected[s]);
          });
        }),
        { numRuns: 20, seed: 17 },
      );
    });
  });
}
