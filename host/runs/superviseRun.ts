import { pino, type Logger } from 'pino';
import { ErrorCodes } from '../../sdk/protocol/errorCodes.js';
import { RpcError } from '../../sdk/protocol/rpcError.js';
import type { ChatEvent, RunMessageResult, RunParams, RunResult, Update } from '../../sdk/protocol/types.js';
import { SUPPORTED_PROTOCOL_VERSIONS } from '../../sdk/protocol/version.js';
import { attachPeer, lineWriter } from '../../sdk/transport/attach.js';
import type { HostLimits } from '../config/limits.js';
import { registerGroup, unregisterGroup } from '../process/liveGroups.js';
import { processStartTime } from '../util/procIdentity.js';
import {
  decidedLimit,
  OutcomeRecorder,
  type LimitHit,
  type OutcomeDetail,
  type OutcomeStatus,
  type RunOutcome,
} from '../process/outcome.js';
import { runShutdownLadder, type LadderStart } from '../process/shutdownLadder.js';
import { spawnRunner, type RunnerLaunch, type RunnerProcess } from '../process/spawnRunner.js';
import { TailBuffer } from '../process/tailBuffer.js';
import type { WarmProcess } from './warmSlot.js';
import type { Containment } from '../sandbox/containment.js';
import { forgetMachineProbe } from '../sandbox/probe.js';
import { unsupportedHostRequests, type HostRequestHandler } from '../rpc/hostRequestHandler.js';
import { HostEndpoint } from '../../sdk/transport/hostEndpoint.js';
import type { RequestLimits } from '../../sdk/transport/requestBudget.js';
import { deferred, settlesWithin } from '../util/deferred.js';
import { MESSAGE_ANSWER_MS } from './runInbox.js';
import { killRunLeftovers } from './killRunLeftovers.js';

/** Everything needed to supervise one run of one runner process. */
export interface SuperviseRunOptions {
  launch: RunnerLaunch;
  params: RunParams;
  limits: HostLimits;
  /** Rate, count and size limits on the runner's requests to the host (default: the SDK's). */
  requestLimits?: RequestLimits;
  host: { name: string; version: string };
  /** Abort to cancel the run: `run/cancel`, then a kill after `cancelGraceMs`. */
  signal?: AbortSignal;
  /** The runner process started (its pid is also its process-group and session id). */
  onSpawn?(pid: number): void;
  /**
   * The outcome is decided — at the latest the moment the runner's result line is read — before
   * the shutdown ladder: the place to revoke the run's credentials.
   */
  onDecided?(): void;
  /**
   * The runner declared `capabilities.append` and its run was sent: `deliver` sends it a `run/message` (steering
   * `append`) until the outcome is decided, then answers every call `accepted: false`.
   */
  onMessages?(deliver: (event: ChatEvent) => Promise<RunMessageResult>): void;
  /** How long `deliver` waits for the runner's answer (default {@link MESSAGE_ANSWER_MS}). */
  messageAnswerMs?: number;
  /** Each valid update, in order, until the outcome is decided. */
  onUpdate?(update: Update, seq: number): void;
  /** Each runner → host request's decision, once: accepted, or the refusal (the endpoint's or its handler's). */
  onHostRequest?(method: string, verdict: 'accepted' | RpcError): void;
  hostRequests?: HostRequestHandler;
  log?: Logger;
  /** Applied to stderr before it is kept or logged. */
  redact?(text: string): string;
  /**
   * Abort (with an Error) to fail the run because the host could not handle what the runner sent,
   * after the fact (e.g. storing a batch of its updates failed): `failed`, with the error's text.
   */
  fault?: AbortSignal;
  /**
   * A runner process already started and initialized (a warm slot, docs/warm-pool.md): used instead of a spawn and
   * the handshake; the escapee scan looks for its slot id.
   */
  warm?: WarmProcess;
  /**
   * What holds the whole process tree (e.g. the run's cgroup): emptied after the shutdown ladder,
   * so descendants that left the process group and session (setsid) die too.
   */
  containment?: Containment;
}

type Phase = 'starting' | 'handshake' | 'running';

/** How long a runner that closed its stdout has to exit before it is failed as a protocol error. */
const STDOUT_CLOSED_GRACE_MS = 1_000;

const PHASE_TEXT: Record<Phase, string> = {
  starting: 'before it started',
  handshake: 'before answering initialize',
  running: 'before returning a run result',
};

/**
 * Start a runner, run one `run` through it under every host limit, stop it with the shutdown
 * ladder, and return one {@link RunOutcome}. Never throws for anything the runner does: a
 * misbehaving runner fails its run with a reason. The first reason recorded wins.
 */
export async function superviseRun(options: SuperviseRunOptions): Promise<RunOutcome> {
  const startedAt = performance.now();
  const { limits } = options;
  const runId = options.params.run.runId;
  const log = options.log ?? pino({ level: 'silent' });
  const redact = options.redact ?? ((text: string) => text);
  const recorder = new OutcomeRecorder();
  const counters = { stdoutBytes: 0, stderrBytes: 0, updates: 0, eventBytes: 0, hostRequests: 0 };
  const tail = new TailBuffer(limits.stderrTailBytes);
  const decidedNow = deferred();
  let ladderStart: LadderStart = 'sigterm';
  let phase: Phase = 'starting';
  // A warm slot's pool refills once this run's first update was handed on (queued behind its commit), at its first
  // request, or at its end: starting the replacement before would delay this run's first update (docs/warm-pool.md).
  let warmStarted = options.warm?.started;
  const startedNow = () => {
    if (warmStarted) setImmediate(warmStarted);
    warmStarted = undefined;
  };

  const decide = (
    status: OutcomeStatus,
    reason: string,
    detail: OutcomeDetail = {},
    start: LadderStart = 'sigterm',
  ) => {
    if (!recorder.decide(status, reason, detail)) return;
    ladderStart = start;
    startedNow();
    options.onDecided?.();
    decidedNow.resolve();
  };
  const outcome = (extra: Partial<RunOutcome>): RunOutcome => {
    const decision = recorder.decided!;
    return {
      runId,
      ...decision,
      pid: null,
      exitCode: null,
      signal: null,
      termination: 'exited',
      survivors: [],
      stderrTail: redact(tail.toString()),
      durationMs: Math.round(performance.now() - startedAt),
      counters,
      ...extra,
    };
  };

  const leftovers = {
    containment: options.containment,
    envRunId: options.warm?.slotId ?? runId,
    killConfirmMs: limits.killConfirmMs,
  };
  let proc: RunnerProcess;
  try {
    proc = options.warm?.proc ?? (await spawnRunner(options.launch, { cgroups: options.containment?.paths }));
  } catch (error) {
    decide('crashed', error instanceof Error ? error.message : String(error));
    // A start can fail after the fork: the runner spawner died before the host had the runner's pid and stdio
    // (docs/runner-spawner.md). Whatever of the run did start is killed as at any run's end, never left running
    // unsupervised; its start time is unknown, so the escapee scan reads every process.
    const left = await killRunLeftovers({ ...leftovers, startedAfter: 0 });
    return outcome({
      survivors: left.survivors,
      ...(left.note ? { reason: `${recorder.decided!.reason}; ${left.note}` } : {}),
    });
  }
  registerGroup(proc.pid, options.containment ? () => options.containment!.killNow() : undefined);
  // Every process of the run started after its runner: the escapee scan skips older ones.
  const runnerStart = processStartTime(proc.pid);
  // Host code run for one runner message must never throw into the stream that delivered it: an
  // exception fails this run, with its reason, and nothing else (issue 11, item 5).
  const hostFailed = (what: string, error: unknown) => {
    log.error({ runId, err: error }, `host failed while handling ${what}`);
    decide('failed', `host failed while handling ${what}: ${describeError(error)}`, { code: ErrorCodes.InternalError });
  };
  const guarded = (what: string, fn: () => void) => {
    try {
      fn();
    } catch (error) {
      hostFailed(what, error);
    }
  };
  guarded('the runner start', () => options.onSpawn?.(proc.pid));
  const onFault = () => hostFailed('the runner output', options.fault?.reason);
  if (options.fault?.aborted) onFault();
  else options.fault?.addEventListener('abort', onFault, { once: true });

  let exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const exited = deferred();
  const stdoutEnded = deferred();
  let result: RunResult | undefined;
  let runner: RunOutcome['runner'];
  let cancelRequested = false;

  const conn = new HostEndpoint({
    send: lineWriter(proc.stdin),
    host: options.host,
    hostRequests: options.hostRequests ?? unsupportedHostRequests,
    onViolation: (v) => decide('protocol_error', `runner sent an invalid message: ${v.reason}`, { code: v.code }),
    onUpdate: (params, lineBytes) => {
      counters.updates += 1;
      counters.eventBytes += lineBytes;
      if (counters.updates > limits.maxUpdates) {
        return decide('quota_exceeded', `runner sent more than ${limits.maxUpdates} updates`, { limit: 'maxUpdates' });
      }
      if (counters.eventBytes > limits.maxEventBytes) {
        return decide('quota_exceeded', `runner updates exceeded ${limits.maxEventBytes} bytes`, {
          limit: 'maxEventBytes',
        });
      }
      if (!recorder.decided)
        guarded(`update ${params.seq} (${params.update.kind})`, () => options.onUpdate?.(params.update, params.seq));
      startedNow();
    },
    onHostRequest: (method, _runId, verdict) => {
      counters.hostRequests += 1;
      startedNow();
      guarded(`a ${method} request`, () => options.onHostRequest?.(method, verdict));
      if (verdict !== 'accepted')
        log.info({ runId, method, code: verdict.code }, `runner request refused: ${verdict.message}`);
    },
    // A handler threw something that is not a refusal: the runner got -32603, the run fails.
    onHandlerError: (method, error) => hostFailed(`the runner's ${method}`, error),
  });

  // Idle watchdog: one timer, re-armed lazily instead of on every message.
  let lastActivity = performance.now();
  let idleTimer: NodeJS.Timeout | undefined;
  const armIdle = (ms: number) => {
    idleTimer = setTimeout(
      () =>
        afterWaitingInput(() => {
          if (recorder.decided) return;
          const quietFor = performance.now() - lastActivity;
          if (quietFor >= limits.idleMs) {
            decide('timed_out', `runner sent nothing for ${limits.idleMs} ms (idle limit)`, { timeout: 'idle' });
          } else armIdle(limits.idleMs - quietFor);
        }),
      ms,
    );
  };

  const detachStdout = attachPeer(
    conn.peer,
    proc.stdout,
    (code, reason) =>
      code === ErrorCodes.QuotaExceeded
        ? decide('quota_exceeded', `runner stdout: ${reason}`, { limit: 'maxLineBytes' })
        : decide('protocol_error', `runner stdout: ${reason}`, { code }),
    {
      maxLineBytes: limits.maxLineBytes,
      // Once a runner is condemned, its output is counted and dropped, not parsed.
      shouldRead: () => !(recorder.decided && ladderStart === 'sigterm'),
      onBytes: (bytes) => {
        counters.stdoutBytes += bytes;
        if (counters.stdoutBytes > limits.maxStdoutBytes) {
          decide('quota_exceeded', `runner stdout exceeded ${limits.maxStdoutBytes} bytes`, {
            limit: 'maxStdoutBytes',
          });
        }
      },
      onLine: (bytes) => {
        lastActivity = performance.now();
        conn.noteLineBytes(bytes);
      },
      onEnd: () => stdoutEnded.resolve(),
    },
  );

  proc.stderr.on('data', (chunk: Buffer) => {
    counters.stderrBytes += chunk.length;
    tail.push(chunk);
    if (counters.stderrBytes > limits.maxStderrBytes) {
      decide('quota_exceeded', `runner stderr exceeded ${limits.maxStderrBytes} bytes`, { limit: 'maxStderrBytes' });
    }
  });
  proc.stderr.on('error', () => undefined);
  if (options.warm) {
    // What the slot wrote while it waited, then the streams it paused at the take (nothing was lost in between).
    for (const chunk of options.warm.stderr) tail.push(chunk);
    counters.stderrBytes += options.warm.stderr.reduce((n, c) => n + c.length, 0);
    proc.stdout.resume();
    proc.stderr.resume();
  }

  // A runner that closes stdout but lives on can never answer: fail it now, not at a timeout.
  // The pipe also closes when the process exits; give that exit time to arrive first, generously,
  // so a crash on a loaded machine is not misreported as a protocol error.
  void stdoutEnded.promise.then(async () => {
    if (exitInfo || (await settlesWithin(exited.promise, STDOUT_CLOSED_GRACE_MS))) return;
    decide(
      'protocol_error',
      `runner closed its stdout ${PHASE_TEXT[phase]} but kept running (no exit within ${STDOUT_CLOSED_GRACE_MS} ms)`,
    );
  });

  const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
    exitInfo = { code, signal };
    exited.resolve();
    // The result may still sit in the pipe: let stdout drain (bounded, since a grandchild may
    // hold it open) before calling the exit a crash. Node reaps every exited child whenever it handles a SIGCHLD,
    // so this exit may be seen a turn before the pipe's last bytes are polled: a stall in between overruns the
    // bound with those bytes unread, hence one more turn before deciding.
    void settlesWithin(stdoutEnded.promise, limits.exitDrainMs).then(() =>
      afterWaitingInput(() => {
        const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
        // Maybe the sandbox, not the runner: the next host process probes the machine again (probeCache.ts).
        if (phase !== 'running') forgetMachineProbe();
        conn.close(RpcError.runnerExited(how));
        decide('crashed', `runner ${how} ${PHASE_TEXT[phase]}${lastStderrLine(redact(tail.toString()))}`);
      }),
    );
  };
  // A warm process may have died between its take and now: its exit was already emitted.
  if (proc.child.exitCode !== null || proc.child.signalCode !== null)
    onExit(proc.child.exitCode, proc.child.signalCode);
  else proc.child.once('exit', onExit);

  const wallTimer = setTimeout(
    () =>
      afterWaitingInput(() =>
        decide('timed_out', `run exceeded the wall-clock limit of ${limits.wallClockMs} ms`, {
          timeout: 'wall_clock',
        }),
      ),
    limits.wallClockMs,
  );
  let cancelTimer: NodeJS.Timeout | undefined;
  const onAbort = () => {
    if (recorder.decided || cancelRequested) return;
    if (phase !== 'running') return decide('cancelled', 'cancelled before the run started');
    cancelRequested = true;
    const reason = String(
      (options.signal?.reason as Error | undefined)?.message ?? options.signal?.reason ?? 'cancelled',
    );
    conn.cancel(runId, reason);
    cancelTimer = setTimeout(
      () =>
        afterWaitingInput(() =>
          decide('cancelled', `runner did not answer run/cancel within ${limits.cancelGraceMs} ms; killed`, {
            timeout: 'cancel_grace',
          }),
        ),
      limits.cancelGraceMs,
    );
  };
  options.signal?.addEventListener('abort', onAbort, { once: true });

  const drive = async () => {
    try {
      phase = 'handshake';
      if (options.signal?.aborted) return onAbort();
      const init = options.warm?.init ?? (await conn.initialize(limits.handshakeTimeoutMs));
      proc.stdoutOpened(); // the answer came through stdout: from now on its end is the runner's
      if (!SUPPORTED_PROTOCOL_VERSIONS.includes(init.protocolVersion)) {
        return decide(
          'protocol_error',
          `runner speaks protocol version ${init.protocolVersion}; this host supports ` +
            `${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}`,
          { code: ErrorCodes.ProtocolVersionUnsupported },
        );
      }
      runner = { name: init.runner.name, version: init.runner.version, protocolVersion: init.protocolVersion };
      if (recorder.decided) return;
      phase = 'running';
      lastActivity = performance.now();
      armIdle(limits.idleMs);
      if (options.signal?.aborted) onAbort();
      const running = conn.run(options.params, options.requestLimits);
      if (init.capabilities.append && options.onMessages) {
        const { goalRevision } = options.params.run;
        const answerMs = options.messageAnswerMs ?? MESSAGE_ANSWER_MS;
        guarded('the run start', () =>
          options.onMessages!((event) =>
            // A run being cancelled or already decided (a limit, a crash) will not act on a message it takes.
            conn.message({ runId, goalRevision, event }, answerMs, () => !recorder.decided && !cancelRequested),
          ),
        );
      }
      result = await running;
      decide(result.status, describeResult(result, cancelRequested), {}, 'request');
    } catch (error) {
      const err = error instanceof RpcError ? error : RpcError.internal(String(error));
      const asked = phase === 'handshake' ? 'initialize' : 'run';
      // the exit handler decides
      if (err.code === ErrorCodes.RunnerExited || err.code === ErrorCodes.ConnectionClosed) return;
      if (err.code === ErrorCodes.RunnerUnresponsive) {
        return decide('timed_out', `runner did not answer initialize within ${limits.handshakeTimeoutMs} ms`, {
          timeout: 'handshake',
        });
      }
      if (err.code === ErrorCodes.InvalidMessage)
        return decide('protocol_error', `runner sent an invalid message: ${err.message}`, { code: err.code });
      decide(
        phase === 'handshake' ? 'protocol_error' : 'failed',
        `runner answered ${asked} with error ${err.code}: ${err.message}`,
        { code: err.code },
      );
    }
  };
  void drive();

  await decidedNow.promise;
  clearTimeout(wallTimer);
  clearTimeout(idleTimer);
  clearTimeout(cancelTimer);
  options.signal?.removeEventListener('abort', onAbort);
  options.fault?.removeEventListener('abort', onFault);
  conn.endRun();

  const ladder = await runShutdownLadder({
    proc,
    start: ladderStart,
    graces: limits,
    exited: exited.promise,
    hasExited: () => exitInfo !== undefined,
    requestShutdown: (ms) => conn.shutdown(ms),
  });
  const notes = options.containment?.notes?.() ?? [];
  const containerHits = options.containment?.limitHits?.() ?? [];
  const left = await killRunLeftovers({ ...leftovers, startedAfter: runnerStart ?? 0 });
  const survivors = [...new Set([...ladder.survivors, ...left.survivors])];
  if (left.note) notes.push(left.note);
  // Each host request is recorded with its handler's real outcome, before the run's end is.
  await conn.settleHostRequests(limits.killConfirmMs);
  conn.close(RpcError.runnerExited('run ended'));
  detachStdout();
  proc.stdout.destroy();
  proc.stderr.destroy();
  proc.stdin.destroy();
  if (survivors.length === 0) unregisterGroup(proc.pid);

  return outcome({
    result,
    runner,
    pid: proc.pid,
    exitCode: exitInfo?.code ?? null,
    signal: exitInfo?.signal ?? null,
    termination: ladder.termination,
    survivors,
    ...(notes.length ? { reason: `${recorder.decided!.reason}; ${notes.join('; ')}` } : {}),
    ...withLimits(recorder.decided!.detail, containerHits),
  });
}

/** The limits that acted on a run: the one that decided it (a host timer or output limit) and the container's. */
function withLimits(detail: OutcomeDetail, containerHits: LimitHit[]): { limits?: LimitHit[] } {
  const decided = decidedLimit(detail);
  const limits = [...new Set([...(decided ? [decided] : []), ...containerHits])];
  return limits.length ? { limits } : {};
}

function describeResult(result: RunResult, cancelRequested: boolean): string {
  switch (result.status) {
    case 'completed':
      return 'runner completed the run';
    case 'failed':
      return `runner reported failure${result.error ? `: ${result.error.message}` : ''}`;
    case 'cancelled':
      return cancelRequested ? 'runner stopped on run/cancel' : 'runner reported the run cancelled';
  }
}

/** An exception as one short line for a run's reason. */
export function describeError(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

/**
 * Run `decide` after the event loop's next poll phase. A loop stalled past a limit runs the overdue timer before it
 * reads the runner's output already waiting in the pipe (Node runs timers, then polls): a runner that answered in
 * time would be failed for the host's stall. One turn lets those bytes be read first; `decide` then looks again.
 */
function afterWaitingInput(decide: () => void): void {
  setImmediate(decide);
}

function lastStderrLine(tail: string): string {
  const line = tail.trimEnd().split('\n').pop()?.trim();
  return line ? `; stderr: ${JSON.stringify(line.slice(0, 300))}` : '';
}
