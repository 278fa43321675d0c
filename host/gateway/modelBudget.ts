import { randomUUID } from 'node:crypto';
import { processStartTime } from '../util/procIdentity.js';
import type { ModelResource } from '../bindings/schema.js';
import type { Store } from '../state/store.js';
import { SPEND_WINDOW_MS } from '../state/spend.js';
import {
  deleteReservation,
  deleteRunReservations,
  insertReservation,
  reservationHolders,
  reservedSpend,
  settledSpend,
} from '../state/gatewayCalls.js';
import type { GatewayRun } from './runContext.js';
import { ownerIsLocal, ownerLive } from '../state/claims.js';
import type { WireFormat } from './wire/index.js';

/** Output tokens reserved for — and sent upstream as the maximum of — a call that names none. */
export const DEFAULT_MAX_OUTPUT_TOKENS = 4096;

/**
 * Request bytes per estimated input token. Tokenizers average 3.5–4.5 characters of English a
 * token, and a request body's JSON structure (keys, quotes, escapes) is bytes the provider does
 * not count, so bytes / 4 of the body as sent is at or above the billed input for typical
 * conversations. It can fall short (CJK text, provider-side system prompts, images): the call
 * is then charged its metered usage in full (docs/gateway.md, "Budgets").
 */
export const BYTES_PER_INPUT_TOKEN = 4;

/** The field(s) a wire names its output maximum with; the first is the one the gateway adds. */
const MAX_OUTPUT_FIELDS: Record<WireFormat, string[]> = {
  anthropic: ['max_tokens'],
  responses: ['max_output_tokens'],
  chat: ['max_completion_tokens', 'max_tokens'],
};

/** The output maximum a request names (the largest of its wire's fields), if any. */
export function maxOutputOf(format: WireFormat, body: Record<string, unknown>): number | undefined {
  const values = MAX_OUTPUT_FIELDS[format]
    .map((f) => body[f])
    .filter((v): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v > 0);
  return values.length ? Math.max(...values) : undefined;
}

/** What a call may use at most: the amount held against every budget until it settles. */
export interface CallReservation {
  inputTokens: number;
  outputTokens: number;
  tokens: number;
  costUsd: number;
}

/** A budget refusal (the wire's error shape is made by the caller). */
export interface BudgetRefusal {
  status: number;
  type: string;
  message: string;
  deniedBy: string;
}

/**
 * The body to send upstream — with the wire's output maximum, added when the request named none
 * so the provider enforces what is reserved — and the call's reservation; or a 400 message when
 * a maximum is not a positive integer.
 */
export function planReservation(
  model: ModelResource,
  format: WireFormat,
  body: Record<string, unknown>,
): { body: Record<string, unknown>; reservation: CallReservation } | { invalid: string } {
  let maxOut: number | undefined;
  for (const field of MAX_OUTPUT_FIELDS[format]) {
    const value = body[field];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1)
      return { invalid: `${field} must be a positive integer` };
    maxOut = Math.max(maxOut ?? 0, value);
  }
  const sent = maxOut === undefined ? { ...body, [MAX_OUTPUT_FIELDS[format][0]!]: DEFAULT_MAX_OUTPUT_TOKENS } : body;
  const outputTokens = maxOut ?? DEFAULT_MAX_OUTPUT_TOKENS;
  const inputTokens = Math.ceil(Buffer.byteLength(JSON.stringify(sent)) / BYTES_PER_INPUT_TOKEN);
  const costUsd = model.pricing
    ? (inputTokens * model.pricing.inputPerMTokUsd + outputTokens * model.pricing.outputPerMTokUsd) / 1_000_000
    : 0;
  return { body: sent, reservation: { inputTokens, outputTokens, tokens: inputTokens + outputTokens, costUsd } };
}

// The per-day budgets' window: the one GET /v1/spend sums too.
const DAY_MS = SPEND_WINDOW_MS;
const OWN_START = processStartTime(process.pid);
const OWNER = { pid: process.pid, start: OWN_START };

/** Settled (metered) and reserved (in flight) tokens and cost of a run and of its binding's last 24 h. */
export function budgetUse(store: Store, run: Pick<GatewayRun, 'claims'>, now = Date.now()) {
  const { runId, bindingId } = run.claims;
  return {
    run: { settled: settledSpend(store, { runId }), reserved: reservedSpend(store, { runId }) },
    day: {
      settled: settledSpend(store, { bindingId, sinceMs: now - DAY_MS }),
      reserved: reservedSpend(store, { bindingId }),
    },
  };
}

/**
 * Hold `reservation` against the run's budgets, or refuse the call. The check and the insert are
 * one IMMEDIATE transaction (the write lock is taken first), so calls racing in this process or in
 * other host processes on the same data folder are admitted one after another, each seeing the
 * others' reservations. Reservations of host processes that are gone are dropped first.
 */
export function reserve(
  store: Store,
  run: GatewayRun,
  reservation: CallReservation,
  now = Date.now(),
): { id: string } | BudgetRefusal {
  // store.transaction is IMMEDIATE when outermost (and joins an outer one otherwise).
  return store.transaction(() => {
    dropOrphans(store);
    const use = budgetUse(store, run, now);
    const { budget, claims } = run;
    const need =
      `this call reserves up to ${reservation.tokens} tokens (input estimate ${reservation.inputTokens} + max ` +
      `output ${reservation.outputTokens})`;
    const check = (
      field: keyof GatewayRun['budget'],
      scope: 'run' | 'day',
      unit: 'tokens' | 'USD',
    ): BudgetRefusal | undefined => {
      const limit = budget[field];
      if (limit === undefined) return undefined;
      const key = unit === 'tokens' ? 'tokens' : 'cost';
      const settled = use[scope].settled[key];
      const held = use[scope].reserved[key];
      const adding = unit === 'tokens' ? reservation.tokens : reservation.costUsd;
      if (settled + held + adding <= limit) return undefined;
      const n = (x: number) => (unit === 'USD' ? x.toFixed(6) : String(x));
      const who = scope === 'run' ? 'this run' : 'the binding in the last 24 h';
      return {
        status: 403,
        type: 'permission_error',
        deniedBy: `binding.limits.${field}`,
        message:
          `paddock: model budget limits.${field} (binding ${claims.bindingId}) would be exceeded: ${who} used ` +
          `${n(settled)} of ${n(limit)} ${unit}, ${n(held)} ${unit} are reserved by calls in flight, and ` +
          `${need}${unit === 'USD' ? `, ${n(adding)} USD` : ''}`,
      };
    };
    const refusal =
      check('modelTokensPerRun', 'run', 'tokens') ??
      check('modelCostPerRunUsd', 'run', 'USD') ??
      check('modelTokensPerDay', 'day', 'tokens') ??
      check('modelCostPerDayUsd', 'day', 'USD');
    if (refusal) return refusal;
    const id = randomUUID();
    insertReservation(store, {
      id,
      runId: claims.runId,
      bindingId: claims.bindingId,
      tokens: reservation.tokens,
      costUsd: reservation.costUsd,
      atMs: now,
      owner: OWNER,
    });
    return { id };
  });
}

/** Drop a reservation (its call settled; call inside the transaction that records the call). */
export function releaseReservation(store: Store, id: string): void {
  deleteReservation(store, id);
}

/** Drop whatever this host process still holds for a run (its gateway closed; a backstop). */
export function releaseRunReservations(store: Store, runId: string): number {
  return deleteRunReservations(store, runId, OWNER);
}

/**
 * Delete the reservations of host processes that no longer run (matched by pid and process
 * start time, so a reused pid does not keep a dead host's reservations alive): a crashed host's
 * calls are over, and what they metered before the crash is what counts. A reservation for another host's run
 * (PostgreSQL) is judged by that host's lease, never by a pid of another machine (claims.ts `ownerLive`).
 */
function dropOrphans(store: Store): void {
  for (const h of reservationHolders(store)) {
    if (!ownerIsLocal(store, h)) {
      if (!ownerLive(store, { hostPid: null, hostStart: null, ownerHost: h.ownerHost, ownerEpoch: h.ownerEpoch }))
        deleteReservation(store, h.id);
      continue;
    }
    if (h.pid === process.pid && h.start === OWN_START) continue;
    if (h.start !== null && processStartTime(h.pid) === h.start) continue;
    if (h.start === null && h.pid !== process.pid && pidAlive(h.pid)) continue;
    deleteReservation(store, h.id);
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
