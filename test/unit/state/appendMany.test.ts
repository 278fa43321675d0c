import { describe, expect, it } from 'vitest';
import { tempStore } from '../../helpers/store.js';
import { refuseInserts } from '../../helpers/rawDb.js';
import { dbOf, type NewEvent, type Store } from '../../../host/state/store.js';

const delta = (i: number): NewEvent => ({
  type: 'run.update',
  runId: 'run_x',
  data: { runnerSeq: i + 1, update: { kind: 'message.delta', text: `part ${i}` } },
});

/** Count the executions of statements whose text matches `pattern` that `store` prepares from now on. */
function countExecutions(store: Store, pattern: RegExp): { count: number } {
  const db = dbOf(store);
  const prepare = db.prepare.bind(db);
  const counter = { count: 0 };
  db.prepare = (source: string) => {
    const statement = prepare(source);
    if (!pattern.test(source)) return statement;
    // A call made inside another (PostgreSQL's `get` is its `all`) is the same execution: counted once.
    let inside = false;
    for (const method of ['run', 'get', 'all'] as const) {
      const call = statement[method].bind(statement) as (...args: unknown[]) => never;
      statement[method] = (...args: unknown[]) => {
        if (inside) return call(...args);
        counter.count += 1;
        inside = true;
        try {
          return call(...args);
        } finally {
          inside = false;
        }
      };
    }
    return statement;
  };
  return counter;
}

describe('Store.appendMany', () => {
  it("reads its sessions' last seqs once per batch (32 sessions a statement), not once per session", () => {
    const { store } = tempStore();
    const reads = countExecutions(store, /max\(seq\)/);
    const sessions = Array.from({ length: 40 }, (_, i) => store.ensureSession('default', 'b', `s${i}`).sessionId);
    const before = reads.count; // each ensureSession appended its session.created: one read each
    expect(before).toBe(40);
    const stored = store.appendMany(
      Array.from({ length: 120 }, (_, i) => ({ sessionId: sessions[i % 40]!, event: delta(i) })),
    );
    expect(reads.count - before).toBe(2); // 40 sessions: a read of 32 and one of 8
    expect(stored.map((e) => e.seq)).toEqual(Array.from({ length: 120 }, (_, i) => 2 + Math.floor(i / 40)));
    store.appendMany(Array.from({ length: 10 }, (_, i) => ({ sessionId: sessions[i % 3]!, event: delta(i) })));
    expect(reads.count - before).toBe(3);
    for (const session of sessions) {
      const seqs = store.readEvents(session).map((e) => e.seq);
      expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    }
    store.close();
  });

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
    refuseInserts(store, 'events', `NEW.data LIKE '%part 40"%'`, 'refused');
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
