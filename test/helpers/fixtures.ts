import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { parseLimits, type HostLimitsInput } from '../../host/config/limits.js';
import { compileNodeEntry } from '../../host/plugins/compileEntry.js';
import { buildRunnerEnv } from '../../host/process/envAllowlist.js';
import type { RunOutcome } from '../../host/process/outcome.js';
import type { RunnerLaunch } from '../../host/process/spawnRunner.js';
import type { HostRequestHandler } from '../../host/rpc/hostRequestHandler.js';
import { buildRunParams, newRunId, textEvent } from '../../sdk/protocol/runParams.js';
import { superviseRun } from '../../host/runs/superviseRun.js';
import type { Containment } from '../../host/sandbox/containment.js';
import type { Update } from '../../sdk/protocol/types.js';
import { parseProcStat } from '../../sdk/process/procTable.js';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Absolute path of a file in the repo. */
export const repoPath = (relative: string) => join(REPO_ROOT, relative);

/** Short graces so misbehaviour tests finish quickly; each test overrides what it exercises. */
export const FAST_LIMITS: HostLimitsInput = {
  handshakeTimeoutMs: 10_000,
  wallClockMs: 20_000,
  idleMs: 20_000,
  cancelGraceMs: 1_000,
  shutdownGraceMs: 500,
  termGraceMs: 500,
  killConfirmMs: 3_000,
};

/** How to start a TypeScript runner entry (bundled like the host bundles runners). */
export async function launchFor(
  entry: string,
  env: Record<string, string> = {},
): Promise<RunnerLaunch & { cleanup(): void }> {
  const script = await compileNodeEntry(repoPath(entry));
  const root = mkdtempSync(join(tmpdir(), 'paddock-test-'));
  const runnerEnv = buildRunnerEnv({ hostEnv: process.env, home: root, tmpDir: root, runId: 'fixture', extra: env });
  return {
    command: process.execPath,
    args: [script],
    cwd: root,
    env: runnerEnv,
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
}

/** What {@link superviseEntry} returns: the outcome and every update the host forwarded. */
export interface SupervisedRun {
  outcome: RunOutcome;
  updates: Update[];
}

/** Supervise one run of a runner entry through the real host code path. */
export async function superviseEntry(
  entry: string,
  options: {
    limits?: HostLimitsInput;
    env?: Record<string, string>;
    text?: string;
    config?: Record<string, unknown>;
    grants?: string[];
    signal?: AbortSignal;
    onUpdate?(update: Update): void;
    hostRequests?: HostRequestHandler;
    containment?: Containment;
    /** Words put before the runner's command (e.g. the cgroup join wrapper). */
    launchPrefix?: string[];
  } = {},
): Promise<SupervisedRun> {
  const limits = parseLimits({ ...FAST_LIMITS, ...options.limits });
  const base = await launchFor(entry, options.env);
  const [command, ...args] = [...(options.launchPrefix ?? []), base.command, ...base.args];
  const launch = { ...base, command: command!, args };
  const updates: Update[] = [];
  const runId = newRunId();
  try {
    const outcome = await superviseRun({
      launch,
      params: buildRunParams({
        runId,
        sessionId: 'ses_test',
        event: textEvent(options.text ?? 'hello world'),
        binding: {
          bindingId: 'b_test',
          runner: { id: 'fixture' },
          config: options.config ?? {},
          hostRequests: options.grants ?? [],
        },
        wallClockMs: limits.wallClockMs,
      }),
      limits,
      host: { name: 'paddock-test', version: '0.0.0' },
      signal: options.signal,
      hostRequests: options.hostRequests,
      containment: options.containment,
      log: pino({ level: 'silent' }),
      onUpdate: (update) => {
        updates.push(update);
        options.onUpdate?.(update);
      },
    });
    return { outcome, updates };
  } finally {
    launch.cleanup();
  }
}

/** True while `pid` exists in /proc and is not a zombie. */
export function isAlive(pid: number): boolean {
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.state !== 'Z';
  } catch {
    return false;
  }
}
