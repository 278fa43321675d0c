import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { probeCacheKey, readProbeCache, writeProbeCache, type CachedProbe } from '../../host/sandbox/probeCache.js';
import { resolveRunIdentity } from '../../host/sandbox/runIdentity.js';
import { liveGroupMembers } from '../../host/util/procIdentity.js';
import { ErrorCodes } from '../../sdk/protocol/errorCodes.js';
import type { RunOutcome } from '../../host/process/outcome.js';
import { isAlive, superviseEntry } from '../helpers/fixtures.js';

const fixture = (name: string) => `test/fixtures/runners/${name}.ts`;

// This file's kept machine probe (host/sandbox/probeCache.ts), in its own folder.
const probeDir = mkdtempSync(join(tmpdir(), 'paddock-misbehaving-probe-'));
process.env.PADDOCK_PROBE_CACHE_DIR = probeDir;
const KEPT: CachedProbe = {
  bwrap: { available: true, path: '/usr/bin/bwrap', version: 'bubblewrap (kept)' },
  diskQuota: {
    available: true,
    tools: { mkfs: '/usr/sbin/mkfs.ext4', mount: '/usr/bin/mount', umount: '/usr/bin/umount' },
  },
};

/** Every run must leave nothing of the runner's group or session behind. */
function expectNothingLeft(outcome: RunOutcome): void {
  expect(outcome.survivors).toEqual([]);
  expect(outcome.pid).toBeTypeOf('number');
  expect(liveGroupMembers(outcome.pid!)).toEqual([]);
}

describe('a misbehaving runner fails its run with the right outcome and leaves no process', () => {
  it('hangs forever → timed_out by the idle timer', async () => {
    const { outcome } = await superviseEntry(fixture('hangsForever'), { limits: { idleMs: 400 } });
    expect(outcome.status).toBe('timed_out');
    expect(outcome.detail.timeout).toBe('idle');
    expect(outcome.reason).toMatch(/sent nothing for 400 ms/);
    expectNothingLeft(outcome);
  });

  it('hangs forever → timed_out by the wall clock when idle allows it', async () => {
    const { outcome } = await superviseEntry(fixture('hangsForever'), {
      limits: { wallClockMs: 1_200, idleMs: 60_000 },
    });
    expect(outcome.status).toBe('timed_out');
    expect(outcome.detail.timeout).toBe('wall_clock');
    expect(outcome.reason).toMatch(/wall-clock limit of 1200 ms/);
    expectNothingLeft(outcome);
  });

  it('ignores SIGTERM → killed with SIGKILL after the grace', async () => {
    const { outcome } = await superviseEntry(fixture('ignoresSigterm'), {
      limits: { wallClockMs: 1_000, termGraceMs: 300 },
    });
    expect(outcome.status).toBe('timed_out');
    expect(outcome.termination).toBe('sigkill');
    expect(outcome.signal).toBe('SIGKILL');
    expect(outcome.stderrTail).toContain('ignoring SIGTERM');
    expectNothingLeft(outcome);
  });

  it('crashes on start → crashed, with exit code and stderr (and the kept machine probe is dropped)', async () => {
    // Maybe the sandbox failed, not the runner: the next host process probes the machine again (probeCache.ts).
    const key = probeCacheKey(resolveRunIdentity());
    writeProbeCache(probeDir, key, KEPT);
    const { outcome } = await superviseEntry(fixture('crashOnStart'));
    expect(readProbeCache(probeDir, key)).toBeUndefined();
    expect(outcome.status).toBe('crashed');
    expect(outcome.exitCode).toBe(3);
    expect(outcome.reason).toMatch(/exited with code 3 before answering initialize/);
    expect(outcome.reason).toContain('fatal: fixture cannot start');
    expect(outcome.runner).toBeUndefined();
    expectNothingLeft(outcome);
  });

  it('crashes mid-run → crashed after its update was delivered (the kept machine probe stays)', async () => {
    const key = probeCacheKey(resolveRunIdentity());
    writeProbeCache(probeDir, key, KEPT);
    onTestFinished(() => expect(readProbeCache(probeDir, key)).toEqual(KEPT));
    const { outcome, updates } = await superviseEntry(fixture('crashMidRun'));
    expect(outcome.status).toBe('crashed');
    expect(outcome.exitCode).toBe(7);
    expect(outcome.reason).toMatch(/exited with code 7 before returning a run result/);
    expect(updates).toEqual([{ kind: 'progress', message: 'about to crash' }]);
    expectNothingLeft(outcome);
  });

  it('writes non-JSON to stdout → protocol_error quoting the line', async () => {
    const { outcome } = await superviseEntry(fixture('garbageOnStdout'));
    expect(outcome.status).toBe('protocol_error');
    expect(outcome.detail.code).toBe(ErrorCodes.ParseError);
    expect(outcome.reason).toContain('not JSON: "Loading model weights... done!"');
    expectNothingLeft(outcome);
  });

  it('sends an oversized line → quota_exceeded on maxLineBytes', async () => {
    const { outcome } = await superviseEntry(fixture('oversizedMessage'), { limits: { maxLineBytes: 1024 * 1024 } });
    expect(outcome.status).toBe('quota_exceeded');
    expect(outcome.detail.limit).toBe('maxLineBytes');
    expect(outcome.reason).toMatch(/exceeded the 1048576-byte limit/);
    expectNothingLeft(outcome);
  });

  it.each([
    ['updates', 'maxEventBytes', {}],
    ['newlines', 'maxStdoutBytes', {}],
    ['oneLine', 'maxLineBytes', {}],
    ['updates', 'maxUpdates', { maxUpdates: 50 }],
  ] as const)('floods stdout (%s, 400 MB) → quota_exceeded on %s, host memory bounded', async (mode, limit, limits) => {
    const rssBefore = process.memoryUsage().rss;
    const { outcome } = await superviseEntry(fixture('floodsStdout'), { env: { FLOOD_MODE: mode }, limits });
    expect(outcome.status).toBe('quota_exceeded');
    expect(outcome.detail.limit).toBe(limit);
    // Counted, not buffered: the host never holds more than a line plus a pipe chunk.
    expect(outcome.counters.stdoutBytes).toBeLessThan(400 * 1024 * 1024);
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(150 * 1024 * 1024);
    expectNothingLeft(outcome);
  });

  it('floods stderr → quota_exceeded on maxStderrBytes, only the tail kept', async () => {
    const { outcome } = await superviseEntry(fixture('floodsStderr'), {
      limits: { maxStderrBytes: 2 * 1024 * 1024, stderrTailBytes: 4096 },
    });
    expect(outcome.status).toBe('quota_exceeded');
    expect(outcome.detail.limit).toBe('maxStderrBytes');
    expect(outcome.stderrTail.length).toBeLessThanOrEqual(4096);
    expect(outcome.stderrTail).toContain('log noise');
    expectNothingLeft(outcome);
  });

  it('never answers shutdown and ignores stdin end → run completed, stopped by SIGTERM', async () => {
    const { outcome } = await superviseEntry(fixture('neverAnswersShutdown'), { limits: { shutdownGraceMs: 300 } });
    expect(outcome.status).toBe('completed');
    expect(outcome.result?.output?.parts).toEqual([{ type: 'text', text: 'done' }]);
    expect(outcome.termination).toBe('sigterm');
    expect(outcome.stderrTail).toContain('stdin closed; staying anyway');
    expectNothingLeft(outcome);
  });

  it('ignores cancel → cancelled after the cancel grace, killed', async () => {
    const controller = new AbortController();
    const started = performance.now();
    let cancelledAt = 0;
    const { outcome, updates } = await superviseEntry(fixture('ignoresCancel'), {
      limits: { cancelGraceMs: 500 },
      signal: controller.signal,
      onUpdate: () => {
        if (!cancelledAt) {
          cancelledAt = performance.now();
          controller.abort(new Error('user pressed stop'));
        }
      },
    });
    expect(outcome.status).toBe('cancelled');
    expect(outcome.detail.timeout).toBe('cancel_grace');
    expect(outcome.reason).toMatch(/did not answer run\/cancel within 500 ms; killed/);
    expect(outcome.stderrTail).toContain('cancel? no.');
    // Updates after the decision are not forwarded.
    expect(updates.length).toBeLessThan(30);
    expect(cancelledAt - started).toBeGreaterThan(0);
    expectNothingLeft(outcome);
  });

  it('closes its stdout but stays alive → protocol_error at once, not a timeout', async () => {
    const { outcome } = await superviseEntry(fixture('closesStdout'), {
      limits: { idleMs: 30_000, wallClockMs: 40_000 },
    });
    expect(outcome.status).toBe('protocol_error');
    expect(outcome.reason).toMatch(/closed its stdout before returning a run result but kept running/);
    expect(outcome.durationMs).toBeLessThan(10_000);
    expectNothingLeft(outcome);
  });

  it('returns an invalid result → protocol_error naming the field', async () => {
    const { outcome } = await superviseEntry(fixture('invalidResult'));
    expect(outcome.status).toBe('protocol_error');
    expect(outcome.detail.code).toBe(ErrorCodes.InvalidMessage);
    expect(outcome.reason).toMatch(/invalid run result: status/);
    expect(outcome.result).toBeUndefined();
    expectNothingLeft(outcome);
  });

  it.each([
    ['0', 'sigterm'],
    ['1', 'sigkill'],
  ])('spawns grandchildren (ignore TERM: %s) → run completed, every grandchild killed', async (ignoreTerm) => {
    const { outcome, updates } = await superviseEntry(fixture('spawnsGrandchildren'), {
      env: { GRANDCHILD_IGNORE_TERM: ignoreTerm },
    });
    expect(outcome.status).toBe('completed');
    const spawned = updates.find((u) => u.kind === 'log' && u.message === 'spawned');
    const pids = (spawned as { data: { pids: number[] } }).data.pids;
    expect(pids).toHaveLength(3);
    for (const pid of pids) expect(isAlive(pid)).toBe(false);
    expectNothingLeft(outcome);
  });

  // Fakes, named as such: host code that throws as a bug or odd data would. The real failures
  // behind them (SqliteError from json_valid, RangeError from a deep walk) are kept out at the
  // protocol edge now; see hostSurvivesRunner.test.ts for those and for planted store failures.
  it('a host request handler that throws → failed with the error (the runner got -32603), nothing left', async () => {
    const throwing = {
      handle: async () => {
        throw new TypeError("Cannot read properties of undefined (reading 'x')");
      },
    };
    const { outcome } = await superviseEntry(fixture('misusesHostRequests'), {
      grants: ['state/get'],
      hostRequests: throwing,
    });
    expect(outcome.status).toBe('failed');
    expect(outcome.detail.code).toBe(ErrorCodes.InternalError);
    expect(outcome.reason).toBe(
      "host failed while handling the runner's state/get: TypeError: Cannot read properties of undefined (reading 'x')",
    );
    expectNothingLeft(outcome);
  });

  it('an update callback that throws → failed with the error, not an exception out of the stdout stream', async () => {
    const { outcome } = await superviseEntry(fixture('crashMidRun'), {
      onUpdate: () => {
        throw new RangeError('Maximum call stack size exceeded');
      },
    });
    expect(outcome.status).toBe('failed');
    expect(outcome.reason).toBe(
      'host failed while handling update 1 (progress): RangeError: Maximum call stack size exceeded',
    );
    expectNothingLeft(outcome);
  });
});

describe('protocol violations fail the run with protocol_error', () => {
  it.each([
    ['wrongRunId', /run\/update for run run_someone-else, which is not active/],
    ['seqGap', /seq 3 out of order \(expected 2\)/],
    ['unknownNotification', /unknown notification run\/explode/],
    ['badUpdate', /invalid run\/update params: update/],
    ['protocolVersion', /protocol version 99; this host supports 1/],
  ])('%s', async (violation, reason) => {
    const { outcome } = await superviseEntry(fixture('protocolViolations'), { env: { VIOLATION: violation } });
    expect(outcome.status).toBe('protocol_error');
    expect(outcome.reason).toMatch(reason);
    expectNothingLeft(outcome);
  });

  it('exits with code 0 without a result → crashed', async () => {
    const { outcome } = await superviseEntry(fixture('protocolViolations'), {
      env: { VIOLATION: 'exitWithoutResult' },
    });
    expect(outcome.status).toBe('crashed');
    expect(outcome.reason).toMatch(/exited with code 0 before returning a run result/);
    expectNothingLeft(outcome);
  });

  it('answers run with a JSON-RPC error → failed with the code', async () => {
    const { outcome } = await superviseEntry(fixture('protocolViolations'), { env: { VIOLATION: 'errorAnswer' } });
    expect(outcome.status).toBe('failed');
    expect(outcome.detail.code).toBe(-32603);
    expect(outcome.reason).toMatch(/answered run with error -32603: runner blew up internally/);
    expectNothingLeft(outcome);
  });
});
