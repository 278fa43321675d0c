/**
 * The gateway's tables: `gateway_calls` (one row per model call) and `gateway_reservations` (calls in flight)
 * (docs/gateway.md, "Budgets").
 */
import { dbOf, type Store } from './store.js';

/** One model call as metered, refused ones included. */
export interface GatewayCallRow {
  at: Date;
  runId: string;
  sessionId: string;
  bindingId: string;
  modelId: string;
  provider: string;
  endpoint: string;
  status: number;
  attempts: number;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  latencyMs: number;
  error: string | null;
}

/** Write one `gateway_calls` row (the caller redacts `error` and audits the call in the same transaction). */
export function insertGatewayCall(store: Store, r: GatewayCallRow): void {
  dbOf(store)
    .prepare(
      'INSERT INTO gateway_calls (at, at_ms, run_id, session_id, binding_id, model_id, provider, endpoint, ' +
        'status, attempts, input_tokens, output_tokens, cost_usd, latency_ms, error) VALUES (?, ?, ?, ?, ?, ?, ' +
        '?, ?, ?, ?, ?, ?, ?, ?, ?)',
    )
    .run(
      r.at.toISOString(),
      r.at.getTime(),
      r.runId,
      r.sessionId,
      r.bindingId,
      r.modelId,
      r.provider,
      r.endpoint,
      r.status,
      r.attempts,
      r.inputTokens,
      r.outputTokens,
      r.costUsd,
      r.latencyMs,
      r.error,
    );
}

/** Tokens and cost, summed. */
export interface Spend {
  tokens: number;
  cost: number;
}

/** Which rows a sum covers: one run, or one binding (settled calls since `sinceMs`). */
export type SpendScope = { runId: string } | { bindingId: string; sinceMs: number };

/** Metered tokens and cost of the calls in `scope`. */
export function settledSpend(store: Store, scope: SpendScope): Spend {
  const [where, args] =
    'runId' in scope
      ? ['run_id = ?', [scope.runId]]
      : ['binding_id = ? AND at_ms > ?', [scope.bindingId, scope.sinceMs]];
  return dbOf(store)
    .prepare(
      `SELECT COALESCE(SUM(input_tokens + output_tokens), 0) AS tokens, COALESCE(SUM(cost_usd), 0) AS cost ` +
        `FROM gateway_calls WHERE ${where}`,
    )
    .get(...args) as Spend;
}

/** Tokens and cost reserved by calls in flight of a run or a binding (any age). */
export function reservedSpend(store: Store, scope: { runId: string } | { bindingId: string }): Spend {
  const [where, arg] = 'runId' in scope ? ['run_id = ?', scope.runId] : ['binding_id = ?', scope.bindingId];
  return dbOf(store)
    .prepare(
      `SELECT COALESCE(SUM(tokens), 0) AS tokens, COALESCE(SUM(cost_usd), 0) AS cost FROM ` +
        `gateway_reservations WHERE ${where}`,
    )
    .get(arg) as Spend;
}

/** The host process (pid + start time) holding a reservation. */
export interface ReservationOwner {
  pid: number;
  start: number | null;
}

/** Hold a reservation (inside the IMMEDIATE transaction that checked the budgets). */
export function insertReservation(
  store: Store,
  r: {
    id: string;
    runId: string;
    bindingId: string;
    tokens: number;
    costUsd: number;
    atMs: number;
    owner: ReservationOwner;
  },
): void {
  dbOf(store)
    .prepare(
      'INSERT INTO gateway_reservations (id, run_id, binding_id, tokens, cost_usd, at_ms, owner_pid, ' +
        'owner_start) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    )
    .run(r.id, r.runId, r.bindingId, r.tokens, r.costUsd, r.atMs, r.owner.pid, r.owner.start);
}

/** Drop one reservation. */
export function deleteReservation(store: Store, id: string): void {
  dbOf(store).prepare('DELETE FROM gateway_reservations WHERE id = ?').run(id);
}

/** Drop what one owner holds for a run; returns how many. */
export function deleteRunReservations(store: Store, runId: string, owner: ReservationOwner): number {
  return (
    dbOf(store)
      // IS NOT DISTINCT FROM: `=` that matches NULL to NULL, in both dialects (PostgreSQL's IS takes no value).
      .prepare(
        'DELETE FROM gateway_reservations WHERE run_id = ? AND owner_pid = ? AND owner_start IS NOT DISTINCT FROM ?',
      )
      .run(runId, owner.pid, owner.start).changes
  );
}

/** A reservation's holder: the host process that holds it, and the lease owner of its run (claims.ts `RunOwner`). */
export interface ReservationHolder {
  id: string;
  pid: number;
  start: number | null;
  ownerHost: string | null;
  ownerEpoch: number | null;
}

/** Every reservation with its holder (a few: the calls in flight). */
export function reservationHolders(store: Store): ReservationHolder[] {
  const rows = dbOf(store)
    .prepare(
      'SELECT g.id AS id, g.owner_pid AS pid, g.owner_start AS start, r.owner_host AS ownerHost, ' +
        'r.owner_epoch AS ownerEpoch FROM gateway_reservations g LEFT JOIN runs r ON r.id = g.run_id',
    )
    .all() as (Omit<ReservationHolder, 'ownerEpoch'> & { ownerEpoch: number | string | null })[];
  return rows.map((r) => ({
    ...r,
    ownerHost: r.ownerHost ?? null,
    ownerEpoch: r.ownerEpoch === null ? null : Number(r.ownerEpoch),
  }));
}
