import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { EventData, EventType, StoredEvent } from '../../../host/state/events.js';
import { sessionHistory } from '../../../host/runs/history.js';
import {
  CONTROL_EVENT_TYPES,
  emptySession,
  foldAll,
  foldControl,
  foldEvent,
  HISTORY_EVENT_TYPES,
  viewSession,
} from '../../../host/state/sessionView.js';
import { Store } from '../../../host/state/store.js';
import { sameStore, tempStore } from '../../helpers/store.js';
import { textEvent } from '../../../sdk/protocol/runParams.js';

type Draft = { type: EventType; runId?: string; data: unknown };

/** A generator of valid session logs: messages, runs with updates and an end, effects, pauses. */
const runArb = (i: number) =>
  fc
    .record({
      deltas: fc.array(fc.record({ messageId: fc.constantFrom('m1', 'm2'), text: fc.string({ maxLength: 5 }) }), {
        maxLength: 4,
      }),
      fullMessage: fc.option(fc.string({ maxLength: 8 }), { nil: undefined }),
      usage: fc.array(fc.record({ inputTokens: fc.nat(100), cumulative: fc.boolean() }), { maxLength: 3 }),
      end: fc.constantFrom('completed', 'failed', 'cancelled', 'timed_out', 'crashed', 'interrupted', 'open'),
      external: fc.option(fc.string({ minLength: 1, maxLength: 6 }), { nil: undefined }),
      effect: fc.constantFrom('none', 'succeeded', 'failed', 'unknown', 'open'),
    })
    .map((r): Draft[] => {
      const runId = `run_${i}`;
      const drafts: Draft[] = [
        { type: 'message.received', data: { event: textEvent(`question ${i}`) } },
        { type: 'run.queued', runId, data: { runner: 'echo', goalRevision: 0, attempt: 1 } },
        {
          type: 'run.started',
          runId,
          data: { pid: 100 + i, pidStart: 1, recoveryDelivered: i > 0 ? [`run_${i - 1}`] : [] },
        },
      ];
      if (r.effect !== 'none') {
        drafts.push({
          type: 'effect.intent',
          runId,
          data: { effectId: `eff_${i}`, kind: 'workspace.create', target: 'ws', probe: { path: '/nowhere' } },
        });
        if (r.effect === 'succeeded' || r.effect === 'failed')
          drafts.push({ type: 'effect.result', runId, data: { effectId: `eff_${i}`, status: r.effect } });
        if (r.effect === 'unknown') {
          drafts.push({
            type: 'effect.reconciled',
            runId,
            data: { effectId: `eff_${i}`, status: 'unknown', how: 'test' },
          });
          drafts.push({ type: 'session.paused', data: { reason: 'unknown effect', effects: [`eff_${i}`] } });
        }
      }
      for (const d of r.deltas)
        drafts.push({
          type: 'run.update',
          runId,
          data: { runnerSeq: 1, update: { kind: 'message.delta', messageId: d.messageId, text: d.text } },
        });
      if (r.fullMessage !== undefined)
        drafts.push({
          type: 'run.update',
          runId,
          data: {
            runnerSeq: 1,
            update: { kind: 'message', messageId: 'm9', parts: [{ type: 'text', text: r.fullMessage }] },
          },
        });
      for (const u of r.usage)
        drafts.push({
          type: 'run.update',
          runId,
          data: {
            runnerSeq: 1,
            update: { kind: 'usage', usage: { inputTokens: u.inputTokens }, cumulative: u.cumulative },
          },
        });
      if (r.end === 'interrupted')
        drafts.push({ type: 'run.interrupted', runId, data: { reason: 'host stopped', killedPid: null } });
      else if (r.end !== 'open') {
        drafts.push({
          type: 'run.ended',
          runId,
          data: {
            status: r.end,
            reason: r.end,
            exitCode: 0,
            signal: null,
            result:
              r.end === 'completed' || r.end === 'failed' || r.end === 'cancelled'
                ? { status: r.end, output: { parts: [{ type: 'text', text: `answer ${i}` }] } }
                : undefined,
          },
        });
        if (r.external && (r.end === 'completed' || r.end === 'cancelled'))
          drafts.push({ type: 'external.saved', runId, data: { external: { sessionId: r.external } } });
      }
      if (r.effect === 'unknown') {
        drafts.push({ type: 'effect.resolved', runId, data: { effectId: `eff_${i}`, status: 'failed', by: 'ops' } });
        drafts.push({ type: 'session.resumed', data: { by: 'ops' } });
      }
      return drafts;
    });

const logArb = fc
  .integer({ min: 1, max: 4 })
  .chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => runArb(i))))
  .map((runs): StoredEvent[] => {
    const drafts: Draft[] = [
      { type: 'session.created', data: { bindingId: 'b', conversationKey: 'k' } },
      ...runs.flat(),
    ];
    return drafts.map((d, index) => ({
      id: `evt_${index}`,
      sessionId: 'ses_p',
      seq: index + 1,
      type: d.type,
      runId: d.runId ?? null,
      at: new Date(1_700_000_000_000 + index * 1000).toISOString(),
      data: d.data as EventData<EventType>,
    }));
  });

/** A generated log as the drafts `Store.append` takes (the store writes its own `session.created`). */
const draftsOf = (log: StoredEvent[]) =>
  log
    .filter((e) => e.type !== 'session.created')
    .map((e) => ({ type: e.type, runId: e.runId, data: e.data }) as Parameters<Store['append']>[1][0]);

/**
 * {@link draftsOf} for case `n` of a property that shares one store among its cases, a session each (a store per case
 * made the PostgreSQL suite migrate a schema per case): run ids are the store's keys, so each case's are its own
 * (`run_3` → `run_c7_3`), wherever the log names them.
 */
const caseDrafts = (log: StoredEvent[], n: number) =>
  JSON.parse(JSON.stringify(draftsOf(log)).replace(/"run_(\d+)"/g, `"run_c${n}_$1"`)) as ReturnType<typeof draftsOf>;

/** The store's control fields of a session are those of its whole log's fold. */
function expectControlOfWholeLog(store: Store, sessionId: string): void {
  const { external, openEffects, paused, pendingRecovery } = store.session(sessionId);
  expect(store.sessionControl(sessionId)).toEqual({ external, openEffects, paused, pendingRecovery });
}

describe('session view (fold over the event log)', () => {
  it('any permutation with duplicates folds to the same view as the clean log', () => {
    fc.assert(
      fc.property(
        logArb.chain((log) => fc.tuple(fc.constant(log), fc.shuffledSubarray(log, { minLength: 0 }), fc.nat())),
        ([log, dupes, seed]) => {
          const noisy = [...log, ...dupes];
          // deterministic shuffle from the seed
          let x = seed + 1;
          for (let i = noisy.length - 1; i > 0; i--) {
            x = (x * 1103515245 + 12345) % 2147483648;
            const j = x % (i + 1);
            [noisy[i], noisy[j]] = [noisy[j]!, noisy[i]!];
          }
          expect(foldAll('ses_p', noisy)).toEqual(foldAll('ses_p', log));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('every prefix folds to a consistent state, equal to folding it incrementally', () => {
    fc.assert(
      fc.property(logArb, (log) => {
        const live = emptySession();
        for (let k = 1; k <= log.length; k++) {
          foldEvent(live, log[k - 1]!);
          const prefix = log.slice(0, k);
          const view = foldAll('ses_p', prefix);
          expect(viewSession('ses_p', live)).toEqual(view);
          expect(view.maxSeq).toBe(k);
          const seqs = view.transcript.map((t) => t.seq);
          expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
          for (const run of view.runs) {
            const events = prefix.filter((e) => e.runId === run.runId).map((e) => e.type);
            const ended = events.includes('run.ended') || events.includes('run.interrupted');
            expect(['queued', 'running'].includes(run.status!)).toBe(!ended);
          }
          // An open effect is an intent in the prefix with no later decision in the prefix.
          for (const eff of view.openEffects) {
            expect(
              prefix.some(
                (e) => e.type === 'effect.intent' && (e.data as { effectId: string }).effectId === eff.effectId,
              ),
            ).toBe(true);
          }
          if (view.paused) expect(prefix.some((e) => e.type === 'session.paused')).toBe(true);
        }
      }),
      { numRuns: 150 },
    );
  });

  it("a fold of only the control types gives the whole log's control fields (what a run's start reads)", () => {
    const control = new Set<string>(CONTROL_EVENT_TYPES);
    fc.assert(
      fc.property(logArb, (log) => {
        const { external, openEffects, paused, pendingRecovery } = foldAll('ses_p', log);
        const only = log.filter((e) => control.has(e.type));
        expect(foldControl('ses_p', only)).toEqual({ external, openEffects, paused, pendingRecovery });
      }),
      { numRuns: 300 },
    );
  });

  it("a run's history from only the history types is its history from the whole log", () => {
    const types = new Set<string>(HISTORY_EVENT_TYPES);
    fc.assert(
      fc.property(logArb, fc.integer({ min: 1, max: 6 }), (log, messages) => {
        const only = log.filter((e) => types.has(e.type));
        for (const runId of new Set(log.map((e) => e.runId).filter((r) => r !== null)))
          expect(sessionHistory(only, runId, { messages }, (t) => t)).toEqual(
            sessionHistory(log, runId, { messages }, (t) => t),
          );
      }),
      { numRuns: 200 },
    );
  });

  it('the store reads the same control fields and history events from SQLite as the whole log gives', () => {
    // One store, a session per case: its first read is a whole read, as in a new store (see caseDrafts).
    const { store } = tempStore();
    let cases = 0;
    try {
      fc.assert(
        fc.property(logArb, (log) => {
          const { sessionId } = store.ensureSession('default', 'b', `k${++cases}`);
          store.append(sessionId, caseDrafts(log, cases));
          expectControlOfWholeLog(store, sessionId);
          const types = new Set<string>(HISTORY_EVENT_TYPES);
          expect(store.historyEvents(sessionId)).toEqual(store.readEvents(sessionId).filter((e) => types.has(e.type)));
        }),
        { numRuns: 60 },
      );
    } finally {
      store.close();
    }
  });

  it("the store's cached control fields, caught up between chunks appended by two connections, equal the log's", () => {
    // One store and one other connection for every case, a new session each: the cache is per session, so each case
    // starts from no cache entry, as in a new store (see caseDrafts).
    const { store } = tempStore();
    const other = Store.open(sameStore(store)); // another connection's commits, as another process's would be
    let cases = 0;
    try {
      fc.assert(
        fc.property(logArb, fc.array(fc.nat(6), { minLength: 1, maxLength: 12 }), (log, cuts) => {
          const { sessionId } = store.ensureSession('default', 'b', `k${++cases}`);
          const drafts = caseDrafts(log, cases);
          let at = 0;
          for (const [i, cut] of [...cuts, drafts.length].entries()) {
            const chunk = drafts.slice(at, at + cut);
            at += chunk.length;
            if (chunk.length > 0) (i % 2 === 0 ? store : other).append(sessionId, chunk);
            expectControlOfWholeLog(store, sessionId);
          }
        }),
        { numRuns: 150 },
      );
    } finally {
      other.close();
      store.close();
    }
  });

  it('an event about an effect the cache dropped as closed makes it read the session whole again', () => {
    const { store } = tempStore();
    const { sessionId } = store.ensureSession('default', 'b', 'k');
    const intent = { effectId: 'eff_c', kind: 'workspace.create', target: 'ws', probe: { path: '/nowhere' } };
    store.append(sessionId, [
      { type: 'effect.intent', runId: null, data: intent },
      { type: 'effect.result', runId: null, data: { effectId: 'eff_c', status: 'succeeded' } },
    ]);
    expect(store.sessionControl(sessionId).openEffects).toEqual([]); // closed: the cache dropped it
    // Not what the host writes after a result, but a log may hold it: the whole log says the effect is open again.
    store.append(sessionId, [
      { type: 'effect.reconciled', runId: null, data: { effectId: 'eff_c', status: 'unknown', how: 'test' } },
    ]);
    expect(store.sessionControl(sessionId).openEffects).toEqual(store.session(sessionId).openEffects);
    expect(store.sessionControl(sessionId).openEffects.map((e) => [e.effectId, e.kind])).toEqual([
      ['eff_c', 'workspace.create'],
    ]);
    store.close();
  });

  it('in a transaction the control fields include its own events; a rollback leaves the cache untouched', () => {
    const { store } = tempStore();
    const { sessionId } = store.ensureSession('default', 'b', 'k');
    const intent = { effectId: 'eff_t', kind: 'workspace.create', target: 'ws', probe: { path: '/nowhere' } };
    expect(store.sessionControl(sessionId).openEffects).toEqual([]); // cached now
    expect(() =>
      store.transaction(() => {
        store.append(sessionId, [{ type: 'effect.intent', runId: null, data: intent }]);
        expect(store.sessionControl(sessionId).openEffects.map((e) => e.effectId)).toEqual(['eff_t']);
        throw new Error('roll back');
      }),
    ).toThrow('roll back');
    expect(store.sessionControl(sessionId).openEffects).toEqual([]);
    store.close();
  });

  it('folds a concrete log as expected: transcript, usage, pointers, recovery', () => {
    const log: StoredEvent[] = [
      { type: 'session.created', data: { bindingId: 'b', conversationKey: 'k' } },
      { type: 'message.received', data: { event: textEvent('hello') } },
      { type: 'run.queued', runId: 'r1', data: { runner: 'echo', goalRevision: 0, attempt: 1 } },
      { type: 'run.update', runId: 'r1', data: { runnerSeq: 1, update: { kind: 'message.delta', text: 'hel' } } },
      { type: 'run.update', runId: 'r1', data: { runnerSeq: 2, update: { kind: 'message.delta', text: 'lo' } } },
      {
        type: 'run.update',
        runId: 'r1',
        data: { runnerSeq: 3, update: { kind: 'usage', usage: { inputTokens: 5 }, cumulative: false } },
      },
      {
        type: 'run.update',
        runId: 'r1',
        data: { runnerSeq: 4, update: { kind: 'usage', usage: { inputTokens: 7 }, cumulative: false } },
      },
      {
        type: 'run.ended',
        runId: 'r1',
        data: {
          status: 'completed',
          reason: 'ok',
          exitCode: 0,
          signal: null,
          result: { status: 'completed', external: { sessionId: 'x1' } },
        },
      },
      { type: 'external.saved', runId: 'r1', data: { external: { sessionId: 'x1' } } },
      { type: 'run.queued', runId: 'r2', data: { runner: 'echo', goalRevision: 0, attempt: 1 } },
      { type: 'run.interrupted', runId: 'r2', data: { reason: 'host stopped', killedPid: null } },
    ].map(
      (d, i) =>
        ({ id: `e${i}`, sessionId: 's', seq: i + 1, runId: null, at: '2026-01-01T00:00:00Z', ...d }) as StoredEvent,
    );
    const view = foldAll('s', log);
    expect(view.transcript.map((t) => [t.role, t.text])).toEqual([
      ['user', 'hello'],
      ['assistant', 'hello'],
    ]);
    expect(view.runs.map((r) => [r.runId, r.status, r.usage])).toEqual([
      ['r1', 'completed', { inputTokens: 12 }],
      ['r2', 'interrupted', null],
    ]);
    expect(view.external).toEqual({ sessionId: 'x1' });
    expect(view.pendingRecovery).toEqual([{ runId: 'r2', reason: 'host stopped', effects: [] }]);
  });
});
