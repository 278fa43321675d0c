import { describe, expect, it } from 'vitest';
import {
  effectsOnce,
  endedExactlyOnce,
  gapFreeSeq,
  interruptionToldOnce,
  noneRunning,
  streamedAreStored,
  streamedUpdates,
  type EventRow,
  type RunRow,
} from '../../campaigns/fault/invariants.js';

// The fault campaign's checkers on fabricated logs: a clean log passes, and each planted violation is reported.

let seq = 0;
const ev = (type: string, runId: string | null, data: object = {}, session = 's1'): EventRow => ({
  session_id: session,
  seq: ++seq,
  type,
  run_id: runId,
  data: JSON.stringify(data),
});
const update = (runId: string, runnerSeq: number, text: string) =>
  ev('run.update', runId, { runnerSeq, update: { kind: 'message.delta', text } });

/** Two runs in one session: r1 interrupted by a host stop and reported to r2, r2 completed. */
function cleanLog(): { events: EventRow[]; runs: RunRow[] } {
  seq = 0;
  const events = [
    ev('run.queued', 'r1'),
    ev('effect.intent', 'r1', { effectId: 'e1', kind: 'workspace.create' }),
    ev('effect.result', 'r1', { effectId: 'e1', status: 'succeeded' }),
    ev('run.started', 'r1', { recoveryDelivered: [] }),
    update('r1', 1, 'a'),
    ev('run.interrupted', 'r1', { reason: 'the host stopped during the run' }),
    ev('run.queued', 'r2'),
    ev('run.started', 'r2', { recoveryDelivered: ['r1'] }),
    update('r2', 1, 'b'),
    update('r2', 1, 'b'),
    ev('run.ended', 'r2', { status: 'completed' }),
  ];
  const runs: RunRow[] = [
    { id: 'r1', status: 'interrupted', pid: null, pid_start: null },
    { id: 'r2', status: 'completed', pid: null, pid_start: null },
  ];
  return { events, runs };
}

describe('fault campaign checkers', () => {
  it('pass a clean log', () => {
    const { events, runs } = cleanLog();
    const streamed = [
      { runId: 'r2', runnerSeq: 1, update: { kind: 'message.delta', text: 'b' } },
      { runId: 'r2', runnerSeq: 1, update: { kind: 'message.delta', text: 'b' } },
    ];
    expect([
      ...gapFreeSeq(events),
      ...noneRunning(runs),
      ...endedExactlyOnce(runs, events),
      ...effectsOnce(events, true),
      ...streamedAreStored(streamed, events),
      ...interruptionToldOnce(runs, events, true),
    ]).toEqual([]);
  });

  it('report a seq gap and a duplicated seq', () => {
    const { events } = cleanLog();
    expect(gapFreeSeq(events.filter((e) => e.seq !== 5))).toEqual(['session s1: seq 6 where 5 was due']);
    expect(gapFreeSeq([...events, { ...events[2]!, session_id: 's2', seq: 1 }, events[3]!])).toEqual([
      'session s1: seq 4 where 5 was due',
    ]);
  });

  it('report a run left running, a run ended twice, a run never ended and a status that disagrees', () => {
    const { events, runs } = cleanLog();
    expect(noneRunning([...runs, { id: 'r3', status: 'running', pid: 1, pid_start: 1 }])).toEqual([
      'run r3 is running',
    ]);
    expect(endedExactlyOnce(runs, [...events, ev('run.ended', 'r1', {})])).toEqual([
      'run r1 ended 2 times (run.interrupted, run.ended)',
    ]);
    expect(endedExactlyOnce([...runs, { id: 'r3', status: 'failed', pid: null, pid_start: null }], events)).toEqual([
      'run r3 ended 0 times ()',
    ]);
    const relabelled = runs.map((r) => (r.id === 'r1' ? { ...r, status: 'completed' } : r));
    expect(endedExactlyOnce(relabelled, events)).toEqual(['run r1 is completed but its end is run.interrupted']);
  });

  it('report an effect intended twice, decided twice, or left undecided after recovery', () => {
    const { events } = cleanLog();
    const twice = [...events, ev('effect.intent', 'r1', { effectId: 'e2', kind: 'workspace.create' })];
    expect(effectsOnce(twice, false)).toEqual(['effect r1:workspace.create intended twice']);
    expect(effectsOnce(twice, true)).toEqual([
      'effect r1:workspace.create intended twice',
      'effect e2 (workspace.create) decided 0 times',
    ]);
    const decidedTwice = [...events, ev('effect.reconciled', 'r1', { effectId: 'e1' })];
    expect(effectsOnce(decidedTwice, false)).toEqual(['effect e1 (workspace.create) decided 2 times']);
  });

  it('report a streamed update that is not stored, counting repeats', () => {
    const { events } = cleanLog();
    const b = { runId: 'r2', runnerSeq: 1, update: { kind: 'message.delta', text: 'b' } };
    expect(streamedAreStored([b, b, b], events)).toEqual(['update 1 of run r2 was streamed but is not stored']);
    expect(streamedAreStored([{ ...b, update: { kind: 'message.delta', text: 'B' } }], events)).toHaveLength(1);
    expect(streamedAreStored([{ ...b, runId: 'r1' }], events)).toHaveLength(1);
  });

  it('report an interruption told twice, or never once recovered', () => {
    const { events, runs } = cleanLog();
    const again = [...events, ev('run.started', 'r3', { recoveryDelivered: ['r1'] })];
    expect(interruptionToldOnce(runs, again, false)).toEqual(['interrupted run r1 was reported 2 times']);
    const untold = events.filter((e) => !(e.type === 'run.started' && e.run_id === 'r2'));
    expect(interruptionToldOnce(runs, untold, false)).toEqual([]);
    expect(interruptionToldOnce(runs, untold, true)).toEqual(['interrupted run r1 was reported 0 times']);
  });

  it('read the updates of `paddock run --json` output, the last line cut short by a kill', () => {
    const out = [
      '{"type":"started","runId":"r9","sessionId":"s"}',
      '{"type":"update","seq":1,"update":{"kind":"progress","message":"x"}}',
      '{"type":"update","seq":2,"upd',
    ].join('\n');
    expect(streamedUpdates(out)).toEqual([{ runId: 'r9', runnerSeq: 1, update: { kind: 'progress', message: 'x' } }]);
  });
});
