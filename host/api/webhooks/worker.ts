/** The delivery worker: claims due deliveries in the store, sends them, records every attempt, retries with backoff. */
import { randomBytes } from 'node:crypto';
import type { Store } from '../../state/store.js';
import type { StoredEvent } from '../../state/events.js';
import { claimDue, nextDue, recordAttempt, type ClaimedDelivery } from '../../state/webhooks.js';
import { parseWebhookAllow, type WebhookAllowList } from './allowList.js';
import { DestinationRefused, resolveDestination, systemResolve, type Resolve } from './destination.js';
import { enqueueApproval, enqueueRun, sweepEndedRuns } from './enqueue.js';
import { sendWebhook, webhookHeaders, type SendResult } from './send.js';

/** How a delivery attempt ended, for the metrics lane's `paddock_webhook_deliveries_total{result}`. */
export type AttemptResult = 'delivered' | 'retry' | 'failed';

/** The default schedule: 1 s, 2 s, 4 s … after the 1st, 2nd, 3rd failure, capped at 5 minutes. */
export function defaultBackoffMs(failedAttempts: number): number {
  return Math.min(1000 * 2 ** (failedAttempts - 1), 5 * 60_000);
}

/** What the worker logs through (a pino logger fits); never handed a secret or a header. */
export interface WorkerLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** Options of {@link WebhookWorker}; every one has a production default. */
export interface WebhookWorkerOptions {
  /** Where deliveries may go (default: loopback only). */
  allow?: WebhookAllowList;
  logger?: WorkerLogger;
  /** Delay before the next attempt after `failedAttempts` failures (injectable for tests). */
  backoffMs?: (failedAttempts: number) => number;
  /** Attempts before a delivery fails for good (default 8). */
  maxAttempts?: number;
  /** One attempt's deadline, resolution included (default 10 s). */
  timeoutMs?: number;
  /** How often the store is looked at for work other processes queued (default 1 s). */
  pollMs?: number;
  /** How long a claim keeps other workers off a delivery (default 3 × timeoutMs: longer than any attempt). */
  leaseMs?: number;
  /** Deliveries sent at once (default 8). */
  batch?: number;
  now?: () => number;
  resolve?: Resolve;
  onResult?: (result: AttemptResult) => void;
}

/**
 * Sends webhook deliveries from the store. Any number of workers (host processes) may share a data folder:
 * each delivery is claimed in a write transaction before it is sent, so it is never sent twice at once.
 */
export class WebhookWorker {
  /** This worker's claim name. */
  readonly id = `whw_${process.pid}_${randomBytes(4).toString('hex')}`;
  private readonly allow: WebhookAllowList;
  private readonly backoffMs: (failedAttempts: number) => number;
  private readonly maxAttempts: number;
  private readonly timeoutMs: number;
  private readonly pollMs: number;
  private readonly leaseMs: number;
  private readonly batch: number;
  private readonly now: () => number;
  private readonly resolve: Resolve;
  private unsubscribe?: () => void;
  private timer?: NodeJS.Timeout;
  private stopped = true;
  /** Set by {@link stop}: a pass in flight finishes its claimed batch and claims no more. */
  private stopping = false;
  private current: Promise<number> = Promise.resolve(0);

  constructor(
    private readonly store: Store,
    private readonly options: WebhookWorkerOptions = {},
  ) {
    this.allow = options.allow ?? parseWebhookAllow();
    this.backoffMs = options.backoffMs ?? defaultBackoffMs;
    this.maxAttempts = options.maxAttempts ?? 8;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.pollMs = options.pollMs ?? 1000;
    this.leaseMs = options.leaseMs ?? 3 * this.timeoutMs;
    this.batch = options.batch ?? 8;
    this.now = options.now ?? Date.now;
    this.resolve = options.resolve ?? systemResolve;
  }

  /** Listen to this process's run ends and work the store until {@link stop}. */
  start(): this {
    if (!this.stopped) return this;
    this.stopped = false;
    this.stopping = false;
    this.unsubscribe = this.store.subscribe((event) => this.onCommitted(event));
    this.schedule(0);
    return this;
  }

  /** Stop listening and polling; resolves when the attempts in flight are recorded. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.stopping = true;
    this.unsubscribe?.();
    clearTimeout(this.timer);
    await this.current;
  }

  /**
   * Queue what the sweep finds, then claim and send every due delivery once (a batch at a time).
   * Returns how many attempts were made. Calls never overlap within one worker.
   */
  runDue(): Promise<number> {
    const next = this.current.then(() => this.sweepAndSend());
    this.current = next.catch(() => 0);
    return next;
  }

  private async sweepAndSend(): Promise<number> {
    sweepEndedRuns(this.store, this.now());
    let attempts = 0;
    while (!this.stopping) {
      const now = this.now();
      const claimed = claimDue(this.store, this.id, now, now + this.leaseMs, this.batch);
      if (claimed.length === 0) return attempts;
      await Promise.all(claimed.map((d) => this.attempt(d)));
      attempts += claimed.length;
    }
    return attempts;
  }

  private onCommitted(event: StoredEvent): void {
    const queue = this.queueOf(event);
    if (!queue) return;
    const runId = event.runId;
    // After the committing caller's stack: queueing is this worker's work, not the run's.
    setImmediate(() => {
      if (this.stopped) return;
      try {
        if (queue() > 0) this.schedule(0);
      } catch (error) {
        // The sweep queues it later; nothing is lost.
        this.options.logger?.warn({ runId, type: event.type, err: String(error) }, 'webhook: queueing failed');
      }
    });
  }

  /** What a committed event queues: a run's end, an approval asked, an approval's decision (else nothing). */
  private queueOf(event: StoredEvent): (() => number) | undefined {
    if (!event.runId) return undefined;
    const runId = event.runId;
    if (event.type === 'run.ended' || event.type === 'run.interrupted')
      return () => enqueueRun(this.store, runId, this.now());
    if (event.type !== 'approval.requested' && event.type !== 'approval.decided') return undefined;
    const approvalId = (event.data as { approvalId?: unknown }).approvalId;
    // A decision without an approval is the policy's at once: nobody was asked, nothing is delivered.
    if (typeof approvalId !== 'string') return undefined;
    const what = event.type === 'approval.requested' ? 'requested' : 'decided';
    return () => enqueueApproval(this.store, approvalId, what, this.now());
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      void this.runDue()
        .catch((error: unknown) => this.options.logger?.warn({ err: String(error) }, 'webhook: worker pass failed'))
        .finally(() => {
          if (this.stopped) return; // the store may be closing
          let due: number | undefined;
          try {
            due = nextDue(this.store);
          } catch (error) {
            // A timer's throw would end the host: the store unreachable a moment (its lost connection is opened
            // again by a later statement) is a poll interval's wait, as a failed pass is.
            this.options.logger?.warn({ err: String(error) }, 'webhook: could not read the next due delivery');
          }
          const wait = due === undefined ? this.pollMs : Math.max(0, Math.min(this.pollMs, due - this.now()));
          this.schedule(wait);
        });
    }, delayMs);
    this.timer.unref();
  }

  private async attempt(d: ClaimedDelivery): Promise<void> {
    const attempt = d.attempts + 1;
    const started = this.now();
    let result: SendResult;
    let refused = false;
    try {
      const dest = await withDeadline(resolveDestination(d.url, this.allow, this.resolve), this.timeoutMs);
      const timestamp = Math.floor(this.now() / 1000);
      const left = Math.max(1, this.timeoutMs - (this.now() - started));
      result = await sendWebhook(dest, webhookHeaders(d.id, d.secret, timestamp, d.body), d.body, left, this.timeoutMs);
    } catch (error) {
      refused = error instanceof DestinationRefused;
      const code = (error as NodeJS.ErrnoException).code;
      result = { status: null, error: refused ? (error as Error).message : `could not resolve: ${code ?? error}` };
    }
    const ok = result.status !== null && result.status >= 200 && result.status < 300;
    const state = ok ? 'delivered' : refused || attempt >= this.maxAttempts ? 'failed' : 'pending';
    const error = ok ? null : (result.error ?? `answered ${result.status}`);
    const ended = this.now();
    const recorded = recordAttempt(this.store, this.id, {
      deliveryId: d.id,
      attempt,
      at: new Date(ended).toISOString(),
      status: result.status,
      error,
      durationMs: ended - started,
      state,
      nextAttemptAt: state === 'pending' ? ended + this.backoffMs(attempt) : ended,
    });
    const outcome: AttemptResult = state === 'pending' ? 'retry' : state;
    const fields = { deliveryId: d.id, webhookId: d.webhookId, attempt, status: result.status, error, outcome };
    if (!recorded) {
      this.options.logger?.warn(fields, 'webhook: the delivery was removed or claimed elsewhere meanwhile');
      return;
    }
    this.options.logger?.info(fields, 'webhook delivery attempt');
    this.options.onResult?.(outcome);
  }
}

/** `promise`, or a timeout error after `ms`. */
function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error('timeout'), { code: `timed out after ${ms} ms` })), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/** Start delivering webhooks from `store` (what `paddock serve` calls; stop it before closing the store). */
export function startWebhookDelivery(store: Store, options: WebhookWorkerOptions = {}): WebhookWorker {
  return new WebhookWorker(store, options).start();
}
