import { readFileSync } from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import { parseCgroupProcs } from '../../../host/sandbox/cgroups.js';
import { parseLimits } from '../../../host/config/limits.js';
import { buildRunnerEnv } from '../../../host/process/envAllowlist.js';
import { OutcomeRecorder } from '../../../host/process/outcome.js';
import { TailBuffer } from '../../../host/process/tailBuffer.js';
import {
  liveDescendants,
  parseProcStat,
  signalableGroup,
  signalablePid,
  signalEach,
} from '../../../sdk/process/procTable.js';

describe('environment allowlist', () => {
  it('keeps locale and PATH, sets HOME/TMPDIR/run id, drops everything else', () => {
    const env = buildRunnerEnv({
      hostEnv: {
        PATH: '/bin',
        LANG: 'C.UTF-8',
        OPENAI_API_KEY: 'sk-x',
        AWS_SECRET_ACCESS_KEY: 'y',
        CLAUDECODE: '1',
        HOME: '/root',
      },
      home: '/ws/home',
      tmpDir: '/ws/tmp',
      runId: 'run_1',
      extra: { MODE: 'x', HOME: '/evil', NODE_OPTIONS: '--require /evil.js' },
    });
    expect(env).toEqual({
      PATH: '/bin',
      LANG: 'C.UTF-8',
      MODE: 'x',
      HOME: '/ws/home',
      TMPDIR: '/ws/tmp',
      PADDOCK_RUN_ID: 'run_1',
    });
  });
});

describe('/proc parsing', () => {
  it('parses a stat line whose command name holds spaces and parentheses', () => {
    const rest = '0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 987654 9 10';
    expect(parseProcStat(`4242 (evil) S 1 2 3 (x)) R 17 4242 4242 ${rest}`)).toEqual({
      pid: 4242,
      state: 'R',
      ppid: 17,
      pgrp: 4242,
      session: 4242,
      startTime: 987654,
    });
  });

  it('finds descendants through parent links, skipping zombies', () => {
    const table = [
      { pid: 10, ppid: 1, pgrp: 10, session: 10, state: 'S', startTime: 1 },
      { pid: 11, ppid: 10, pgrp: 10, session: 10, state: 'S', startTime: 1 },
      { pid: 12, ppid: 11, pgrp: 10, session: 10, state: 'Z', startTime: 1 },
      { pid: 13, ppid: 12, pgrp: 10, session: 10, state: 'S', startTime: 1 },
      { pid: 20, ppid: 1, pgrp: 20, session: 20, state: 'S', startTime: 1 },
    ];
    expect(liveDescendants(10, table).sort()).toEqual([11, 13]);
  });
});

describe('pids the host never signals', () => {
  it('cgroup.procs: a member outside this pid namespace (listed as 0) is counted hidden, never read as a pid', () => {
    expect(parseCgroupProcs('0\n4242\n0\n17\n\n')).toEqual({ pids: [4242, 17], hidden: 2 });
    expect(parseCgroupProcs('')).toEqual({ pids: [], hidden: 0 });
  });

  it('signalEach hands kill(2) no pid ≤ 1 (0: its own group, -1: every process), nor this process, nor garbage', () => {
    const kill = vi.spyOn(process, 'kill').mockImplementation(() => true);
    try {
      signalEach([0, -1, 1, -4242, process.pid, Number.NaN, 1.5, 4242], 'SIGKILL');
      expect(kill.mock.calls).toEqual([[4242, 'SIGKILL']]);
    } finally {
      kill.mockRestore();
    }
    expect([0, 1, -1, process.pid, 4242].map(signalablePid)).toEqual([false, false, false, false, true]);
  });

  it("a process group is signalled only when it is a real one and not this process's own", () => {
    const own = parseProcStat(readFileSync('/proc/self/stat', 'utf8'))!.pgrp;
    expect([0, 1, own, process.pid].map(signalableGroup)).toEqual([false, false, false, false]);
    expect(signalableGroup(own === 4_194_303 ? 4_194_302 : 4_194_303)).toBe(true);
  });
});

describe('limits, outcome, tail', () => {
  it('applies defaults and names the bad field', () => {
    expect(parseLimits().cancelGraceMs).toBe(5_000);
    expect(() => parseLimits({ idleMs: -1 })).toThrow(/invalid limits: idleMs: /);
    expect(() => parseLimits({ idle: 5 } as never)).toThrow(/invalid limits: \(root\): Unrecognized key: "idle"/);
  });

  it('the first decided reason wins', () => {
    const r = new OutcomeRecorder();
    expect(r.decide('quota_exceeded', 'too much', { limit: 'maxStdoutBytes' })).toBe(true);
    expect(r.decide('crashed', 'then died')).toBe(false);
    expect(r.decided).toEqual({ status: 'quota_exceeded', reason: 'too much', detail: { limit: 'maxStdoutBytes' } });
  });

  it('the tail keeps only the last bytes', () => {
    const tail = new TailBuffer(10);
    tail.push(Buffer.from('0123456789abc'));
    expect(tail.toString()).toBe('3456789abc');
    tail.push(Buffer.from('XY'));
    expect(tail.toString()).toBe('56789abcXY');
  });
});
