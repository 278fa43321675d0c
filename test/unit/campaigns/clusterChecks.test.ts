// The cluster campaign's checks on a fabricated log: each violation planted is named, a clean log passes.
import { describe, expect, it } from 'vitest';
import { conversationOrder, eachEventOnce, startedAtMostOnce } from '../../campaigns/cluster/checks.js';
import type { EventRow } from '../../campaigns/fault/invariants.js';

let seq = 0;
const row = (type: string, runId: string | null, data: unknown = {}, session = 's1'): EventRow => ({
  session_id: session,
  seq: ++seq,
  type,
  run_id: runId,
  data: JSON.stringify(data),
});
/** A message and its run, queued, started and ended, as the journal writes them. */
const turn = (eventId: string, runId: string, session = 's1') => [
  row('message.received', null, { event: { id: eventId } }, session),
  row('run.queued', runId, {}, session),
  row('run.started', runId, {}, session),
  row('run.ended', runId, {}, session),
];
const posted = new Map([['c1', ['e1', 'e2']]]);

describe('cluster campaign checks', () => {
  it('a clean log holds', () => {
    seq = 0;
    const log = [...turn('e1', 'r1'), ...turn('e2', 'r2')];
    expect([...eachEventOnce(log, posted), ...startedAtMostOnce(log), ...conversationOrder(log, posted)]).toEqual([]);
  });

  it('an event received twice, one lost, one never posted', () => {
    seq = 0;
    const log = [...turn('e1', 'r1'), ...turn('e1', 'r3'), ...turn('x9', 'r4')];
    expect(eachEventOnce(log, posted)).toEqual([
      'event e1 was received 2 times',
      'event e2 was received 0 times',
      'event x9 is in the log but was never posted',
    ]);
  });

  it('a run started twice', () => {
    seq = 0;
    const log = [...turn('e1', 'r1'), row('run.started', 'r1')];
    expect(startedAtMostOnce(log)).toEqual(['run r1 started 2 times']);
  });

  it('messages out of posted order, and two runs of a conversation active at once', () => {
    seq = 0;
    const log = [
      row('message.received', null, { event: { id: 'e2' } }),
      row('run.queued', 'r2'),
      row('message.received', null, { event: { id: 'e1' } }),
      row('run.queued', 'r1'),
      row('run.started', 'r2'),
      row('run.started', 'r1'),
      row('run.ended', 'r2'),
      row('run.ended', 'r1'),
    ];
    const problems = conversationOrder(log, posted);
    expect(problems).toHaveLength(3);
    expect(problems[0]).toMatch(/messages in the log in the order e2, e1/);
    expect(problems[1]).toMatch(/runs started out of posted order/);
    expect(problems[2]).toMatch(/runs r2 and r1 active at once \(seq 6\)/);
  });
});
