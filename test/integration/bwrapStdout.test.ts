import { afterAll, describe, expect, it } from 'vitest';
import { textEvent } from '../../sdk/protocol/runParams.js';
import { probeMachine } from '../../host/sandbox/probe.js';
import { repoPath } from '../helpers/fixtures.js';
import { tempHost } from '../helpers/host.js';

// Issue 11, item 18c: under bwrap, bwrap's monitor and its pid 1 inherited the runner's stdout
// pipe and held it open, so a runner that closed stdout was ended only by the wall clock. The
// runner now gets its stdout through a FIFO that only its own exec opens.

const host = tempHost({ limits: { wallClockMs: 60_000, idleMs: 60_000 } });
afterAll(() => host.close());

describe('bwrap: a runner that closes its stdout', () => {
  it('fails as protocol_error about 1 s after closing, not at the wall clock; normal runs still stream', async () => {
    expect(probeMachine().bwrap.available, 'needs bwrap').toBe(true);
    const outcome = await host.runs.runAdHoc({
      runner: repoPath('test/fixtures/runnerDirs/closes-stdout'),
      event: textEvent('x'),
      sandbox: 'bwrap',
    });
    expect(outcome.status, outcome.reason).toBe('protocol_error');
    expect(outcome.reason).toMatch(
      /closed its stdout before returning a run result but kept running \(no exit within 1000 ms\)/,
    );
    // Start-up under load takes seconds; the wall clock (60 s) did not decide.
    expect(outcome.durationMs).toBeLessThan(20_000);
    expect(outcome.survivors).toEqual([]);

    const echo = await host.runs.runAdHoc({ runner: 'echo', event: textEvent('one two three'), sandbox: 'bwrap' });
    expect(echo.status, echo.reason).toBe('completed');
    expect(echo.result?.output?.parts).toEqual([{ type: 'text', text: 'one two three' }]);
  }, 120_000);
});
