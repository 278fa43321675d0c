import { describe, expect, it } from 'vitest';
import { firstSeqsDuring, followRun } from '../../../../host/api/openai/followRun.js';
import type { StoredEvent } from '../../../../host/state/events.js';
import { Store } from '../../../../host/state/store.js';
import { sameStore, tempStore } from '../../../helpers/store.js';

const delta = (n: number) => ({
  type: 'run.update' as const,
  data: { runnerSeq: n, update: { kind: 'message.delta' as const, text: `w${n}` } },
});

describe('followRun: a cursor over one run in a real store', () => {
  it('reads what was committed, then each commit, in order, no gap or duplicate, to the terminal event', async () => {
    const { store } = tempStore();
    const { sessionId } = store.ensureSession('default', 'b', 'k');
    // Another run's events interleave in the same session; they are skipped.
    store.append(sessionId, [
      { ...delta(1), runId: 'run_a' },
      { ...delta(1), runId: 'run_b' },
    ]);
    const { value: appended, firstSeq } = await firstSeqsDuring(store, async () =>
      store.append(sessionId, [{ ...delta(2), runId: 'run_a' }]),
    );
    expect(firstSeq.get('run_a')).toBe(appended[0]!.seq);
    const seen: StoredEvent[] = [];
    const reading = (async () => {
      for await (const e of followRun(store, { sessionId, runId: 'run_a', afterSeq: 0 }, new AbortController().signal))
        seen.push(e);
    })();
    // Commits while the reader waits, one per tick, others in one batch larger than a read (500).
    for (let n = 3; n < 40; n++) {
      store.append(sessionId, [
        { ...delta(n), runId: 'run_a' },
        { ...delta(n), runId: 'run_b' },
      ]);
      await new Promise((r) => setImmediate(r));
    }
    store.append(
      sessionId,
      Array.from({ length: 1200 }, (_, i) => ({ ...delta(40 + i), runId: 'run_a' })),
    );
    store.append(sessionId, [
      {
        type: 'run.ended',
        runId: 'run_a',
        data: { status: 'completed', reason: 'done', exitCode: 0, signal: null },
      },
      { ...delta(9999), runId: 'run_a' }, // after the terminal event: never read
    ]);
    await reading;
    const numbers = seen.filter((e) => e.type === 'run.update').map((e) => (e.data as { runnerSeq: number }).runnerSeq);
    expect(numbers).toEqual(Array.from({ length: 1239 }, (_, i) => i + 1));
    expect(seen.at(-1)!.type).toBe('run.ended');
    expect(new Set(seen.map((e) => e.seq)).size).toBe(seen.length);
    store.close();
  });

  it("wakes for another connection's commits (a run another process or host runs) and ends at its end", async () => {
    const { store } = tempStore();
    const { sessionId } = store.ensureSession('default', 'b', 'k');
    // The run's owner writes through a connection of its own: this store's listener never hears those commits.
    const owner = Store.open(sameStore(store));
    const reading = (async () => {
      const seen: StoredEvent[] = [];
      for await (const e of followRun(store, { sessionId, runId: 'run_m', afterSeq: 0 }, new AbortController().signal))
        seen.push(e);
      return seen;
    })();
    await new Promise((r) => setImmediate(r)); // the follower has read once and waits
    owner.append(sessionId, [{ ...delta(1), runId: 'run_m' }]);
    owner.append(sessionId, [
      { type: 'run.ended', runId: 'run_m', data: { status: 'completed', reason: 'done', exitCode: 0, signal: null } },
    ]);
    expect((await reading).map((e) => e.type)).toEqual(['run.update', 'run.ended']);
    owner.close();
    store.close();
  });

  it('ends without a terminal event when its signal aborts', async () => {
    const { store } = tempStore();
    const { sessionId } = store.ensureSession('default', 'b', 'k');
    const controller = new AbortController();
    const reading = (async () => {
      const seen = [];
      for await (const e of followRun(store, { sessionId, runId: 'run_a', afterSeq: 0 }, controller.signal))
        seen.push(e);
      return seen;
    })();
    store.append(sessionId, [{ ...delta(1), runId: 'run_a' }]);
    await new Promise((r) => setImmediate(r));
    controller.abort();
    expect((await reading).map((e) => e.type)).toEqual(['run.update']);
    store.close();
  });
});
