import { describe, expect, it } from 'vitest';
import type { RunOutcome } from '../../../host/process/outcome.js';
import type { RunRow } from '../../../host/state/store.js';
import { expectedStatuses, makeCase, type FuzzCase } from '../../campaigns/fuzz/cases.js';
import { fillPlaceholder, NEXT_SEQ, raw } from '../../campaigns/fuzz/chunk.js';
import { checkCase } from '../../campaigns/fuzz/check.js';
import type { PlayLog } from '../../campaigns/fuzz/player.js';

const ok = raw('{}\n', 'ok', 'fine');
const fatal = raw('nope\n', 'fatal', 'not JSON');
const quota = raw('x\n', 'quota', 'huge');
const unsure = raw('?\n', 'unsure', 'open');

const log = (): PlayLog => ({ hostMethods: ['initialize', 'run', 'shutdown'], answers: 0, badHostLines: [] });
const outcome = (over: Partial<RunOutcome> = {}): RunOutcome =>
  ({
    runId: 'run_1',
    status: 'completed',
    reason: 'runner completed the run',
    pid: 123,
    exitCode: 0,
    signal: null,
    termination: 'exited',
    survivors: [],
    stderrTail: '',
    durationMs: 5,
    counters: { stdoutBytes: 0, stderrBytes: 0, updates: 0, eventBytes: 0, hostRequests: 0 },
    ...over,
  }) as RunOutcome;
const completedCase = (): FuzzCase => ({
  seed: 9,
  early: [],
  handshake: 'valid',
  body: [ok],
  ending: 'completed',
  endChunks: [],
  expected: ['completed'],
});
const row = (over: Partial<RunRow> = {}): RunRow =>
  ({ id: 'run_1', status: 'completed', reason: 'done', endedAt: '2026-12-02T00:00:00Z', ...over }) as RunRow;

describe('protocol fuzz: what the contract allows', () => {
  it('the first message that fails the run decides it, whatever follows and however the runner ends', () => {
    expect(expectedStatuses('valid', [], [ok, fatal, quota], 'completed')).toEqual(['protocol_error']);
    expect(expectedStatuses('valid', [], [ok, quota, fatal], 'hang')).toEqual(['quota_exceeded']);
    expect(expectedStatuses('valid', [fatal], [], 'completed')).toEqual(['protocol_error']);
  });

  it('with no failing message the handshake or the ending decides; an open message also allows protocol_error', () => {
    expect(expectedStatuses('valid', [], [ok, ok], 'close')).toEqual(['crashed']);
    expect(expectedStatuses('silent', [ok], [fatal], 'completed')).toEqual(['timed_out']);
    expect(expectedStatuses('valid', [], [unsure], 'failed').sort()).toEqual(['failed', 'protocol_error']);
  });

  it('a seed makes the same case every time, and each case names at least one allowed status', () => {
    expect(JSON.stringify(makeCase(77))).toBe(JSON.stringify(makeCase(77)));
    for (let seed = 1; seed < 300; seed++) expect(makeCase(seed).expected.length).toBeGreaterThan(0);
  });

  it('fills each seq placeholder with the next number', () => {
    const filled = fillPlaceholder(Buffer.from(`a${NEXT_SEQ}b${NEXT_SEQ}`), NEXT_SEQ, (i) => String(i + 1));
    expect(filled.toString()).toBe('a1b2');
  });
});

describe('protocol fuzz: the checker reports planted violations', () => {
  it('passes a case that ended as allowed, with its end recorded once', () => {
    expect(checkCase(completedCase(), { outcome: outcome(), log: log(), runnerAlive: false })).toEqual([]);
    expect(
      checkCase(
        completedCase(),
        { outcome: outcome(), log: log(), runnerAlive: false },
        { row: row(), endedEvents: 1 },
      ),
    ).toEqual([]);
  });

  it('reports an outcome the contract does not allow, a missing reason, survivors and a live runner', () => {
    const problems = checkCase(completedCase(), {
      outcome: outcome({ status: 'protocol_error', reason: ' ', survivors: [4242] }),
      log: log(),
      runnerAlive: true,
    });
    expect(problems).toEqual([
      'outcome has no reason',
      'ended protocol_error ( ), expected completed',
      'processes survived the run: 4242',
      'runner process 123 still alive after the outcome',
    ]);
  });

  it('reports a host that wrote something other than JSON to the runner', () => {
    const seen = { outcome: outcome(), log: { ...log(), badHostLines: ['oops'] }, runnerAlive: false };
    expect(checkCase(completedCase(), seen)).toEqual(['host wrote non-JSON to the runner: "oops"']);
  });

  it('reports a run missing from the store, left without an end, ended twice or recorded differently', () => {
    const seen = { outcome: outcome(), log: log(), runnerAlive: false };
    expect(checkCase(completedCase(), seen, { row: undefined, endedEvents: 0 })).toEqual([
      'the run is not in the store',
    ]);
    expect(
      checkCase(completedCase(), seen, {
        row: row({ status: 'running', endedAt: null, reason: null }),
        endedEvents: 2,
      }),
    ).toEqual([
      'store says running, the outcome completed',
      'the stored run has no end time',
      'the stored run has no reason',
      'run.ended recorded 2 times',
    ]);
  });
});
