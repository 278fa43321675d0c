import { describe, expect, it } from 'vitest';
import type { RunOutcome } from '../../../host/process/outcome.js';
import { checkAbusive, checkNormal, percentile } from '../../campaigns/abuse/check.js';
import { ABUSES } from '../../campaigns/abuse/kinds.js';

const outcome = (over: Partial<RunOutcome> = {}): RunOutcome =>
  ({ runId: 'run_1', status: 'completed', reason: 'ok', pid: 5, survivors: [], ...over }) as RunOutcome;
const kind = (name: string) => ABUSES.find((a) => a.kind === name)!;

describe('abuse campaign checks', () => {
  it('passes a fork bomb held by the pids limit and ended by the idle limit, with nothing left', () => {
    const run = {
      outcome: outcome({ status: 'timed_out', limits: ['idleMs', 'pids'] }),
      containmentMs: 3300,
      leftovers: [],
    };
    expect(checkAbusive(kind('forkBomb'), run)).toEqual([]);
  });

  it('reports a planted escape: a wrong end, a limit that did not act, no start, survivors and leftovers', () => {
    const run = {
      outcome: outcome({ status: 'completed', reason: 'done', survivors: [77] }),
      containmentMs: undefined,
      leftovers: [88],
    };
    expect(checkAbusive(kind('memoryHog'), run)).toEqual([
      'memoryHog ended completed (done), expected crashed or quota_exceeded',
      'memoryHog: the memoryBytes limit did not act (limits: none)',
      'memoryHog never reported that its abuse started',
      'memoryHog left survivors: 77',
      'memoryHog left processes alive: 88',
    ]);
  });

  it('reports a normal run that did not complete beside an abuse', () => {
    expect(checkNormal(outcome(), 'beside forkBomb')).toEqual([]);
    expect(checkNormal(outcome({ status: 'crashed', reason: 'killed' }), 'beside forkBomb')).toEqual([
      'a normal run beside forkBomb ended crashed: killed',
    ]);
  });

  it('takes nearest-rank percentiles', () => {
    const values = Array.from({ length: 100 }, (_, i) => 100 - i);
    expect(percentile(values, 50)).toBe(50);
    expect(percentile(values, 99)).toBe(99);
    expect(percentile([7], 99)).toBe(7);
    expect(percentile([], 50)).toBeNaN();
  });
});
