import { z } from 'zod';
import { ErrorCodes } from '../protocol/errorCodes.js';
import { RpcError } from '../protocol/rpcError.js';
import { buildRunParams, textEvent } from '../protocol/runParams.js';
import type { WireBindingInput, InitializeResult, RunParams, RunResult, Update } from '../protocol/types.js';
import { PROTOCOL_VERSION } from '../protocol/version.js';
import { attachPeer, lineWriter } from '../transport/attach.js';
import { HostEndpoint, type HostRequestHandler } from '../transport/hostEndpoint.js';
import type { ProtocolViolation } from '../transport/peer.js';
import type { RunnerEnd, RunnerFactory, RunnerTransport } from './transports.js';

/** A run the suite sends: the message text and the runner config. */
export interface ConformanceRun {
  text?: string;
  config?: Record<string, unknown>;
}

/** What the suite's host gives every run, for runners that need more than a config (a model, a gateway). */
export interface ConformanceHost {
  /** Merged into every run's binding (e.g. `models`, `hostRequests`, `gateway`, `workspace`). */
  binding?: Partial<WireBindingInput>;
  /** Answers the runner's host requests (after the usual scope and grant checks). Default: NotSupported. */
  hostRequests?: HostRequestHandler;
}

/** Options of {@link runRunnerConformance}. */
export interface ConformanceOptions {
  /** A run that completes. Default: text "hello", config {}. */
  sampleRun?: ConformanceRun;
  /** A run that keeps the runner busy for a second or more, so it can be cancelled mid-way. */
  slowRun: ConformanceRun;
  /** How long after `run/cancel` the runner may take to answer `cancelled`. Default 2000 ms. */
  cancelGraceMs?: number;
  /** How long the runner may take to exit after `shutdown` or the end of stdin. Default 3000 ms. */
  exitGraceMs?: number;
  /** Longest any one step may take. Default 10000 ms. */
  stepTimeoutMs?: number;
  /** The host's side of each run (default: a binding with only the config, no host requests served). */
  host?: ConformanceHost;
}

/** One behaviour checked. */
export interface ConformanceCheck {
  name: string;
  ok: boolean;
  /** Why it failed (the check's own words: a timeout, a wrong status, protocol violations). */
  detail?: string;
  /** A failed check's runner process, when it ended on its own before the suite stopped it. */
  ended?: RunnerEnd;
  /** A failed check's runner stderr, its last {@link STDERR_IN_REPORT} characters (when the transport keeps it). */
  stderrTail?: string;
  durationMs: number;
}

/** The suite's verdict. */
export interface ConformanceReport {
  passed: boolean;
  checks: ConformanceCheck[];
  /** Each failed check as one line: `name: detail`, then how its runner ended and its stderr tail. */
  failures: string[];
}

/** A host endpoint on a fresh runner, recording what the runner sent. */
class Probe {
  readonly violations: ProtocolViolation[] = [];
  readonly updates: Update[] = [];
  readonly endpoint: HostEndpoint;
  private runs = 0;
  private updateWaiters: (() => void)[] = [];

  constructor(
    readonly transport: RunnerTransport,
    readonly stepTimeoutMs: number,
    readonly host: ConformanceHost = {},
  ) {
    this.endpoint = new HostEndpoint({
      send: lineWriter(transport.input),
      host: { name: 'paddock-conformance', version: '1' },
      onViolation: (v) => this.violations.push(v),
      onUpdate: (params) => {
        this.updates.push(params.update);
        for (const wake of this.updateWaiters.splice(0)) wake();
      },
      hostRequests: host.hostRequests ?? {
        handle: async (method) => Promise.reject(RpcError.notSupported(method, 'conformance host')),
      },
    });
    attachPeer(this.endpoint.peer, transport.output, (code, reason) => this.violations.push({ code, reason }), {
      maxLineBytes: 16 * 1024 * 1024,
      onLine: (bytes) => this.endpoint.noteLineBytes(bytes),
      onEnd: () => this.endpoint.close(RpcError.runnerExited('runner output ended')),
    });
  }

  /** Resolves at the next update the runner sends. */
  nextUpdate(): Promise<void> {
    return new Promise((resolve) => this.updateWaiters.push(resolve));
  }

  initialize(): Promise<InitializeResult> {
    return this.endpoint.initialize(this.stepTimeoutMs);
  }

  params(run: ConformanceRun): RunParams {
    return buildRunParams({
      runId: `run_conformance-${++this.runs}`,
      sessionId: 'ses_conformance',
      event: textEvent(run.text ?? 'hello', { platform: 'conformance', bot: 'conformance-bot' }),
      binding: {
        ...this.host.binding,
        bindingId: 'b_conformance',
        runner: { id: 'under-test' },
        config: run.config ?? {},
      },
      wallClockMs: 600_000,
    });
  }

  async run(params: RunParams): Promise<RunResult> {
    try {
      return await within(this.endpoint.run(params), this.stepTimeoutMs, 'the run result');
    } finally {
      this.endpoint.endRun();
    }
  }

  /** A raw request, answered with its result or rejected with the RpcError. */
  request(method: string, params: unknown): Promise<unknown> {
    return this.endpoint.peer.request(method, params, z.unknown(), { timeoutMs: this.stepTimeoutMs });
  }

  raw(line: string): void {
    this.transport.input.write(line);
  }

  async dispose(): Promise<void> {
    this.transport.kill();
    await this.transport.exited;
  }
}

/**
 * The behaviour every runner must show, checked against fresh runners from `factory`:
 * handshake, a completed run with valid ordered updates, cancel mid-run answered `cancelled`,
 * `run/cancel` for an unknown run ignored, bad input answered with the right JSON-RPC errors
 * while the runner keeps working, `run` before `initialize` refused, exit on `shutdown` and on
 * the end of stdin, and nothing but protocol on stdout. Framework-agnostic: assert on the report.
 */
export async function runRunnerConformance(
  factory: RunnerFactory,
  options: ConformanceOptions,
): Promise<ConformanceReport> {
  const stepTimeoutMs = options.stepTimeoutMs ?? 10_000;
  const cancelGraceMs = options.cancelGraceMs ?? 2_000;
  const exitGraceMs = options.exitGraceMs ?? 3_000;
  const sample = options.sampleRun ?? {};
  const checks: ConformanceCheck[] = [];

  const check = async (name: string, body: (probe: Probe) => Promise<void>) => {
    const started = performance.now();
    const probe = new Probe(await factory(), stepTimeoutMs, options.host);
    const problems: string[] = [];
    try {
      await body(probe);
    } catch (error) {
      problems.push(error instanceof Error ? error.message : String(error));
    } finally {
      await probe.dispose();
    }
    if (probe.violations.length > 0)
      problems.push(`protocol violations: ${probe.violations.map((v) => v.reason).join('; ')}`);
    const durationMs = Math.round(performance.now() - started);
    if (problems.length === 0) checks.push({ name, ok: true, durationMs });
    else checks.push({ name, ok: false, detail: problems.join('; '), ...runnerOutcome(probe.transport), durationMs });
  };

  await check('handshake: initialize answers with protocol version, identity and cancel capability', async (p) => {
    const info = await p.initialize();
    expect(
      info.protocolVersion === PROTOCOL_VERSION,
      `protocolVersion ${info.protocolVersion}, expected ${PROTOCOL_VERSION}`,
    );
    expect(info.capabilities.cancel, 'capabilities.cancel must be true: every runner must honour run/cancel');
  });

  await check('run: a sample run completes with a valid result and ordered updates', async (p) => {
    await p.initialize();
    const result = await p.run(p.params(sample));
    expect(
      result.status === 'completed',
      `status ${result.status}${result.error ? ` (${result.error.message})` : ''}, expected completed`,
    );
  });

  await check('cancel: run/cancel mid-run ends the run with status cancelled within the grace', async (p) => {
    await p.initialize();
    const params = p.params(options.slowRun);
    let settled = false;
    const pending = p.run(params).finally(() => (settled = true));
    await Promise.race([p.nextUpdate(), delay(200)]);
    expect(
      !settled,
      'the slow run finished before it could be cancelled; give options.slowRun a run of a second or more',
    );
    p.endpoint.cancel(params.run.runId, 'conformance cancel');
    const result = await within(pending, cancelGraceMs, `a cancelled result within ${cancelGraceMs} ms of run/cancel`);
    expect(result.status === 'cancelled', `status ${result.status}, expected cancelled`);
  });

  await check('cancel: run/cancel for an unknown run is ignored', async (p) => {
    await p.initialize();
    p.endpoint.cancel('run_does-not-exist', 'stray cancel');
    const result = await p.run(p.params(sample));
    expect(result.status === 'completed', `status ${result.status}, expected completed`);
  });

  await check('bad input: unknown method → -32601, invalid run params → -32602, garbage line survived', async (p) => {
    await p.initialize();
    await expectRpcError(p.request('paddock/noSuchMethod', {}), ErrorCodes.MethodNotFound);
    await expectRpcError(p.request('run', { run: { runId: 42 } }), ErrorCodes.InvalidParams);
    p.raw('this is not JSON\n');
    p.raw('{"jsonrpc":"2.0","method":"paddock/unknownNotification","params":{}}\n');
    const result = await p.run(p.params(sample));
    expect(result.status === 'completed', `after bad input the runner answered ${result.status}, expected completed`);
  });

  await check('bad input: run before initialize is refused with an error', async (p) => {
    const outcome = await p.request('run', p.params(sample)).then(
      () => 'answered with a result',
      (e: unknown) => (e instanceof RpcError && e.code !== ErrorCodes.RunnerExited ? 'error' : `failed: ${String(e)}`),
    );
    expect(outcome === 'error', `run before initialize ${outcome}, expected an error answer`);
  });

  await check('shutdown: answers shutdown, then exits', async (p) => {
    await p.initialize();
    await p.run(p.params(sample));
    await p.endpoint.shutdown(exitGraceMs);
    await within(p.transport.exited, exitGraceMs, `exit within ${exitGraceMs} ms of shutdown`);
  });

  await check('shutdown: exits when its stdin closes', async (p) => {
    await p.initialize();
    p.transport.input.end();
    await within(p.transport.exited, exitGraceMs, `exit within ${exitGraceMs} ms of stdin closing`);
  });

  const failures = checks.filter((c) => !c.ok).map(failureLine);
  return { passed: failures.length === 0, checks, failures };
}

/** How much of the runner's stderr a failed check quotes. */
const STDERR_IN_REPORT = 2_000;

/**
 * For a failed check: how the runner ended, if it ended on its own, and the end of what it wrote
 * to stderr, so a runner that fails to start (a missing module, a syntax error) says why.
 */
function runnerOutcome(transport: RunnerTransport): Pick<ConformanceCheck, 'ended' | 'stderrTail'> {
  // After dispose the runner has ended; the transport leaves out the suite's own kill.
  const ended = transport.ended?.();
  const stderr = transport.stderrTail?.().trimEnd();
  return {
    ...(ended ? { ended } : {}),
    ...(stderr?.trim() ? { stderrTail: stderr.slice(-STDERR_IN_REPORT) } : {}),
  };
}

/** How a runner process ended, in words: `exited with code 7`, `killed by SIGSEGV`, `could not start: …`. */
export function describeRunnerEnd(end: RunnerEnd): string {
  if (end.startError !== undefined) return `could not start: ${end.startError}`;
  return end.signal ? `killed by ${end.signal}` : `exited with code ${end.code}`;
}

/** A failed check as one line: its name and why, how its runner ended, the end of its stderr. */
function failureLine(c: ConformanceCheck): string {
  const parts = [`${c.name}: ${c.detail}`];
  if (c.ended) parts.push(`runner process: ${describeRunnerEnd(c.ended)}`);
  // A tail as long as the cap was (almost surely) cut: say so.
  if (c.stderrTail) parts.push(`runner stderr: ${c.stderrTail.length >= STDERR_IN_REPORT ? '…' : ''}${c.stderrTail}`);
  return parts.join('; ');
}

function expect(condition: boolean, message: string): asserts condition {
  if (!condition) throw new Error(message);
}

async function expectRpcError(promise: Promise<unknown>, code: number): Promise<void> {
  const got = await promise.then(
    () => 'a result',
    (e: unknown) => (e instanceof RpcError ? e.code : String(e)),
  );
  expect(got === code, `expected error ${code}, got ${got}`);
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out waiting ${ms} ms for ${what}`)), ms);
    promise.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}
