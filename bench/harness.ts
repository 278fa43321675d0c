import { spawn } from 'node:child_process';
import { pino } from 'pino';
import { parseLimits, type HostLimitsInput } from '../host/config/limits.js';
import { compileNodeEntry } from '../host/plugins/compileEntry.js';
import { buildRunnerEnv } from '../host/process/envAllowlist.js';
import type { RunOutcome } from '../host/process/outcome.js';
import type { HostRequestHandler } from '../host/rpc/hostRequestHandler.js';
import { buildRunParams, newRunId, textEvent } from '../sdk/protocol/runParams.js';
import { superviseRun } from '../host/runs/superviseRun.js';
import type { Update } from '../sdk/protocol/types.js';

/** The bundled file the host would start for a runner entry (built once, outside the timings). */
export const bundle = (entry: string) => compileNodeEntry(new URL(`../${entry}`, import.meta.url).pathname);

/** One run through the real host path. */
export async function hostRun(
  script: string,
  args: {
    config?: Record<string, unknown>;
    limits?: HostLimitsInput;
    grants?: string[];
    hostRequests?: HostRequestHandler;
    onUpdate?(u: Update): void;
  },
): Promise<RunOutcome> {
  const limits = parseLimits({
    maxUpdates: 10_000_000,
    maxEventBytes: 2 ** 31 - 1,
    maxStdoutBytes: 2 ** 31 - 1,
    ...args.limits,
  });
  const runId = newRunId();
  return superviseRun({
    launch: {
      command: process.execPath,
      args: [script],
      cwd: '/tmp',
      env: buildRunnerEnv({ hostEnv: process.env, home: '/tmp', tmpDir: '/tmp', runId }),
    },
    params: buildRunParams({
      runId,
      sessionId: 'ses_bench',
      event: textEvent('bench'),
      binding: {
        bindingId: 'bench',
        runner: { id: 'bench' },
        config: args.config ?? {},
        hostRequests: args.grants ?? [],
      },
      wallClockMs: limits.wallClockMs,
    }),
    limits,
    // The round trip measures the checks, not the limiter: no rate or count limit gets in the way.
    requestLimits: { requestsPerSecond: 1e9, maxRequests: 1e9, maxRequestBytes: 1024 * 1024 },
    host: { name: 'paddock-bench', version: '0' },
    hostRequests: args.hostRequests,
    log: pino({ level: 'silent' }),
    onUpdate: args.onUpdate,
  });
}

/** The `initialize` and `run` lines a host would send, for driving a runner by hand. */
export function rawRunLines(config: Record<string, unknown>): string {
  const runId = newRunId();
  const init = {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: 1, host: { name: 'raw', version: '0' }, capabilities: {} },
  };
  const params = buildRunParams({
    runId,
    sessionId: 's',
    event: textEvent('bench'),
    binding: { bindingId: 'b', runner: { id: 'r' }, config },
    wallClockMs: 600_000,
  });
  return `${JSON.stringify(init)}\n${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'run', params })}\n`;
}

/**
 * Start `script` with plain child_process (no host), write `input`, and call `onLine` for each
 * stdout line, found by a byte scan only (no JSON parsing). Resolves when `onLine` returns true.
 */
export function rawSpawn(script: string, input: string, onLine: (line: string) => boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script], {
      stdio: ['pipe', 'pipe', 'ignore'],
      env: { PATH: process.env.PATH },
    });
    let rest = '';
    let done = false;
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      if (done) return;
      const parts = (rest + chunk).split('\n');
      rest = parts.pop()!;
      for (const line of parts) {
        if (onLine(line)) {
          done = true;
          child.kill('SIGKILL');
          return resolve();
        }
      }
    });
    child.once('error', reject);
    child.once('exit', () => (done ? undefined : reject(new Error('raw child exited early'))));
    child.stdin.on('error', () => undefined);
    child.stdin.write(input);
  });
}
