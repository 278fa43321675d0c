import { describe, expect, it } from 'vitest';
import { tempStore } from '../../helpers/store.js';
import { rawDb } from '../../helpers/rawDb.js';
import type { NewEvent } from '../../../host/state/store.js';

const delta = (i: number): NewEvent => ({
  type: 'run.update',
  runId: 'run_x',
  data: { runnerSeq: i + 1, update: { kind: 'message.delta', text: `part ${i}` } },
});

describe('Store.appendMany', () => {
  it('gives each session gap-free seqs across a batch of many rows and sessions, in the order given', () => {
    const { store } = tempStore();
    const a = store.ensureSession('default', 'b', 'a').sessionId;
    const b = store.ensureSession('default', 'b', 'b').sessionId;
    store.append(a, [delta(0)]);
    const heard: string[] = [];
    store.subscribe((e) => heard.push(`${e.sessionId === a ? 'a' : 'b'}${e.seq}`));
    // 100 rows: three multi-row inserts of 32 and four single ones, the sessions interleaved.
    const stored = store.appendMany(
      Array.from({ length: 100 }, (_, i) => ({ sessionId: i % 3 === 0 ? b : a, event: delta(i) })),
    );
    const expected = Array.from({ length: 100 }, (_, i) =>
      i % 3 === 0 ? `b${2 + Math.floor(i / 3)}` : `a${3 + i - Math.floor(i / 3) - 1}`,
    );
    expect(stored.map((e) => `${e.sessionId === a ? 'a' : 'b'}${e.seq}`)).toEqual(expected);
    expect(heard).toEqual(expected);
    for (const session of [a, b]) {
      const seqs = store.readEvents(session).map((e) => e.seq);
      expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    }
    const texts = store
      .readEvents(a)
      .filter((e) => e.type === 'run.update')
      .map((e) => (e.data as { update: { text: string } }).update.text);
    expect(texts.slice(0, 3)).toEqual(['part 0', 'part 1', 'part 2']);
    store.close();
  });

  it('writes nothing and tells no listener when one row of the batch is refused', () => {
    const { store } = tempStore();
    const a = store.ensureSession('default', 'b', 'a').sessionId;
    rawDb(store).exec(
      `CREATE TRIGGER poison BEFORE INSERT ON events WHEN NEW.data LIKE '%part 40"%' BEGIN SELECT RAISE(ABORT, ` +
        `'refused'); END`,
    );
    const heard: number[] = [];
    store.subscribe((e) => heard.push(e.seq));
    expect(() => store.appendMany(Array.from({ length: 70 }, (_, i) => ({ sessionId: a, event: delta(i) })))).toThrow(
      /refused/,
    );
    expect(heard).toEqual([]);
    expect(store.readEvents(a).map((e) => e.type)).toEqual(['session.created']);
    // The next append takes the next seq: nothing of the refused batch is left behind.
    expect(store.append(a, [delta(0)])[0]!.seq).toBe(2);
    store.close();
  });
});
