// A run's events as the SSE stream reads them (streamReads.ts readEventsAfter with a run id; migration 15 reads the
// run's updates by the session's primary key from its run.started on): for any interleaving of a session's runs — a
// run queued while another streams, runs streaming side by side, events of no run between them — every page equals
// the run's events filtered from the whole session log, and paging from any seq yields the rest in order.
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import type { EventType } from '../../../host/state/events.js';
import { readEventsAfter } from '../../../host/state/streamReads.js';
import type { NewEvent } from '../../../host/state/store.js';
import { tempStore } from '../../helpers/store.js';

const { store } = tempStore();
afterAll(() => store.close());

const RUNS = ['a', 'b', 'c'];
type Step = { run: number; kind: 'next' | 'notice' | 'loose' };

/** A run's life in order: queued, started, updates, ended; notices and events of no run may come at any point. */
function logOf(steps: Step[], updates: number[], runIds: string[]): NewEvent[] {
  const at = RUNS.map(() => 0);
  const events: NewEvent[] = [];
  const life = (r: number): number => 3 + updates[r]!; // queued, started, n updates, ended
  for (const { run: r, kind } of steps) {
    const runId = runIds[r]!;
    if (kind === 'loose') events.push(ev('run.request', null, { method: 'state/get', decision: 'accepted' }));
    else if (kind === 'notice' && at[r]! > 0 && at[r]! < life(r))
      events.push(ev('run.notice', runId, { update: { kind: 'message.delta', text: 'n' } }));
    else if (kind === 'next' && at[r]! < life(r)) {
      const i = at[r]!++;
      if (i === 0) events.push(ev('run.queued', runId, { runner: 'r', goalRevision: 0, attempt: 1 }));
      else if (i === 1) events.push(ev('run.started', runId, { pid: 1, pidStart: null, recoveryDelivered: [] }));
      else if (i < life(r) - 1)
        events.push(ev('run.update', runId, { runnerSeq: i - 1, update: { kind: 'message.delta', text: `${i}` } }));
      else events.push(ev('run.ended', runId, { status: 'completed', reason: '', exitCode: 0, signal: null }));
    }
  }
  return events;
}
const ev = (type: EventType, runId: string | null, data: unknown): NewEvent => ({ type, runId, data }) as NewEvent;

describe("a run's events read from the session log", () => {
  it('equal the session log filtered by run, for any cursor and page size', () => {
    let session = 0;
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            run: fc.nat(RUNS.length - 1),
            kind: fc.constantFrom<Step['kind']>('next', 'next', 'next', 'notice', 'loose'),
          }),
          { maxLength: 120 },
        ),
        fc.array(fc.nat(30), { minLength: RUNS.length, maxLength: RUNS.length }),
        fc.nat(130),
        fc.integer({ min: 1, max: 40 }),
        (steps, updates, afterSeq, limit) => {
          const { sessionId } = store.ensureSession('default', 'b', `c${session++}`);
          const runIds = RUNS.map((r) => `run_${r}${session}`);
          const events = logOf(steps, updates, runIds);
          if (events.length > 0) store.append(sessionId, events);
          const all = store.readEvents(sessionId);
          for (const runId of runIds) {
            const mine = all.filter((e) => e.runId === runId);
            const page = readEventsAfter(store, { sessionId, runId, afterSeq, limit });
            expect(page.map((e) => e.seq)).toEqual(
              mine
                .filter((e) => e.seq > afterSeq)
                .slice(0, limit)
                .map((e) => e.seq),
            );
            const paged: number[] = [];
            for (let after = 0; ;) {
              const next = readEventsAfter(store, { sessionId, runId, afterSeq: after, limit });
              if (next.length === 0) break;
              paged.push(...next.map((e) => e.seq));
              after = next.at(-1)!.seq;
            }
            expect(paged).toEqual(mine.map((e) => e.seq));
          }
        },
      ),
      { numRuns: 150, seed: 16 },
    );
  });
});
