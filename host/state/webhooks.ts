/** The webhook tables (migration 0008): registrations, deliveries, their attempt log. */
import type { AuditEntry } from '../audit/auditLog.js';
import { dialectOf } from './db.js';
import { larger } from './dialectSql.js';
import { dbOf, type Store } from './store.js';

/** A registration as listed: never its secret. */
export interface WebhookRow {
  id: string;
  tenant: string;
  url: string;
  events: string[];
  createdAt: string;
  createdBy: string;
  removedAt: string | null;
}

/** An active registration as the delivery side needs it (still no secret). */
export interface ActiveWebhook extends WebhookRow {
  sweptTo: string;
}

/** A delivery as listed. */
export interface DeliveryRow {
  id: string;
  webhookId: string;
  tenant: string;
  runId: string;
  type: string;
  state: 'pending' | 'delivered' | 'failed';
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  /** Unix ms of the next attempt (meaningful while pending). */
  nextAttemptAt: number;
  createdAt: string;
  updatedAt: string;
}

/** One attempt of a delivery. */
export interface AttemptRow {
  attempt: number;
  at: string;
  status: number | null;
  error: string | null;
  durationMs: number;
}

/** A delivery a worker claimed: what it needs to send it, secret included (never leaves the worker). */
export interface ClaimedDelivery {
  id: string;
  webhookId: string;
  url: string;
  secret: string;
  body: string;
  attempts: number;
}

const WEBHOOK_COLUMNS =
  'id, tenant, url, events, created_at AS createdAt, created_by AS createdBy, removed_at AS removedAt';
const DELIVERY_COLUMNS =
  'id, webhook_id AS webhookId, tenant, run_id AS runId, type, state, attempts, last_status AS lastStatus, ' +
  'last_error AS lastError, next_attempt_at AS nextAttemptAt, created_at AS createdAt, updated_at AS updatedAt';

const toWebhook = <T extends { events: unknown }>(row: T) => ({
  ...row,
  events: JSON.parse(row.events as string) as string[],
});

/** Store a registration and its audit record in one transaction. */
export function insertWebhook(
  store: Store,
  w: { id: string; tenant: string; url: string; events: string[]; secret: string; createdBy: string; at: string },
  audit: Omit<AuditEntry, 'sessionId' | 'runId'>,
): void {
  store.transaction(() => {
    dbOf(store)
      .prepare(
        'INSERT INTO webhooks (id, tenant, url, events, secret, created_at, created_by, swept_to) ' +
          'VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      )
      .run(w.id, w.tenant, w.url, JSON.stringify(w.events), w.secret, w.at, w.createdBy, w.at);
    store.audit.append(audit, w.at);
  });
}

/** A tenant's registrations (removed ones only when asked), oldest first. */
export function webhooksOf(store: Store, tenant: string, includeRemoved = false): WebhookRow[] {
  const rows = dbOf(store)
    .prepare(
      `SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE tenant = ? ${includeRemoved ? '' : 'AND removed_at IS NULL'} ` +
        'ORDER BY created_at, id',
    )
    .all(tenant) as (WebhookRow & { events: string })[];
  return rows.map(toWebhook);
}

/** One registration of a tenant (another tenant's id reads as absent). */
export function webhookOf(store: Store, tenant: string, id: string): WebhookRow | undefined {
  const row = dbOf(store)
    .prepare(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE tenant = ? AND id = ?`)
    .get(tenant, id) as (WebhookRow & { events: string }) | undefined;
  return row ? toWebhook(row) : undefined;
}

/** Every active registration, for the delivery side. */
export function activeWebhooks(store: Store): ActiveWebhook[] {
  const rows = dbOf(store)
    .prepare(`SELECT ${WEBHOOK_COLUMNS}, swept_to AS sweptTo FROM webhooks WHERE removed_at IS NULL`)
    .all() as (ActiveWebhook & { events: string })[];
  return rows.map(toWebhook);
}

/**
 * Remove a registration: blank its secret, fail its pending deliveries, audit — one transaction.
 * False when the tenant has no such active registration.
 */
export function markWebhookRemoved(
  store: Store,
  tenant: string,
  id: string,
  at: string,
  audit: Omit<AuditEntry, 'sessionId' | 'runId'>,
): boolean {
  const removed = store.transaction(() => {
    const db = dbOf(store);
    const changed = db
      .prepare("UPDATE webhooks SET removed_at = ?, secret = '' WHERE tenant = ? AND id = ? AND removed_at IS NULL")
      .run(at, tenant, id).changes;
    if (changed === 0) return false;
    db.prepare(
      "UPDATE webhook_deliveries SET state = 'failed', last_error = 'webhook removed', updated_at = ?, " +
        "claimed_by = NULL, claimed_until = NULL WHERE webhook_id = ? AND state = 'pending'",
    ).run(at, id);
    store.audit.append(audit, at);
    return true;
  });
  // The blanked row is zeroed in its page (secure_delete), but the WAL still holds the page as it was: copy the WAL
  // into the database and truncate it. A reader in another process on an older snapshot can keep frames alive; they
  // go at a later checkpoint (docs/security-model.md, "Not enforced yet").
  // PostgreSQL has no such file to truncate: the old row version stays in the table's pages until VACUUM reuses them
  // (docs/scale-out.md, "What is left").
  if (removed && dialectOf(dbOf(store)) === 'sqlite') dbOf(store).pragma('wal_checkpoint(TRUNCATE)');
  return removed;
}

/**
 * Queue a delivery unless the registration already has one about its subject (any process may try). The subject is
 * the run id for `run.ended` (the default), the approval id for `approval.requested`, `<approval id>/decided` for
 * `approval.decided` (migration 12).
 */
export function insertDelivery(
  store: Store,
  d: {
    id: string;
    webhookId: string;
    tenant: string;
    runId: string;
    subject?: string;
    type: string;
    body: string;
    at: string;
  },
  nextAttemptAt: number,
): boolean {
  return (
    dbOf(store)
      .prepare(
        'INSERT OR IGNORE INTO webhook_deliveries (id, webhook_id, tenant, run_id, subject, type, body, state, ' +
          "attempts, next_attempt_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?)",
      )
      .run(d.id, d.webhookId, d.tenant, d.runId, d.subject ?? d.runId, d.type, d.body, nextAttemptAt, d.at, d.at)
      .changes === 1
  );
}

/** Whether a registration already has a delivery about a subject (a run id, by default: its `run.ended`). */
export function hasDelivery(store: Store, webhookId: string, subject: string): boolean {
  return (
    dbOf(store)
      .prepare('SELECT 1 FROM webhook_deliveries WHERE webhook_id = ? AND subject = ?')
      .pluck()
      .get(webhookId, subject) !== undefined
  );
}

/** An approval as a webhook delivery tells it (its text fields were redacted by the host when stored). */
export interface ApprovalForWebhook {
  id: string;
  tenant: string;
  runId: string;
  sessionId: string;
  bindingId: string;
  via: string;
  effect: string;
  target: { kind: string; value: string };
  summary: string;
  risk: { score: number; level: string; reasons: string[] };
  requestedLifetime: string;
  goalRevision: number;
  status: string;
  createdAt: string;
  expiresAt: string;
  decidedAt: string | null;
  decidedBy: string | null;
  reason: string | null;
  grantId: string | null;
}

const APPROVAL_COLUMNS =
  'id, tenant, run_id AS runId, session_id AS sessionId, binding_id AS bindingId, via, effect, ' +
  'target_kind AS targetKind, target, summary, risk_score AS riskScore, risk_level AS riskLevel, ' +
  'risk_reasons AS riskReasons, requested_lifetime AS requestedLifetime, goal_revision AS goalRevision, status, ' +
  'created_at AS createdAt, expires_at AS expiresAt, decided_at AS decidedAt, decided_by AS decidedBy, reason, ' +
  'grant_id AS grantId';

type ApprovalSql = Omit<ApprovalForWebhook, 'target' | 'risk'> & {
  targetKind: string;
  target: string;
  riskScore: number;
  riskLevel: string;
  riskReasons: string;
};

const toApprovalForWebhook = ({ targetKind, target, riskScore, riskLevel, riskReasons, ...r }: ApprovalSql) => ({
  ...r,
  target: { kind: targetKind, value: target },
  risk: { score: riskScore, level: riskLevel, reasons: JSON.parse(riskReasons) as string[] },
});

/** One approval, for a delivery about it. */
export function approvalForWebhook(store: Store, id: string): ApprovalForWebhook | undefined {
  const row = dbOf(store).prepare(`SELECT ${APPROVAL_COLUMNS} FROM approvals WHERE id = ?`).get(id) as
    ApprovalSql | undefined;
  return row ? toApprovalForWebhook(row) : undefined;
}

/**
 * Approvals asked, or decided, at or after `since` (ISO), oldest first by that time, after the (at, id) cursor: what
 * the catch-up sweep queues `approval.requested` and `approval.decided` deliveries from.
 */
export function approvalsSince(
  store: Store,
  what: 'requested' | 'decided',
  since: string,
  after: { at: string; id: string } | undefined,
  limit: number,
): (ApprovalForWebhook & { at: string })[] {
  const col = what === 'requested' ? 'created_at' : 'decided_at';
  const from = after ?? { at: since, id: '' };
  const rows = dbOf(store)
    .prepare(
      `SELECT ${APPROVAL_COLUMNS}, ${col} AS at FROM approvals ` +
        `WHERE ${col} >= ? AND (${col} > ? OR (${col} = ? AND id > ?)) ` +
        `ORDER BY ${col}, id LIMIT ?`,
    )
    .all(since, from.at, from.at, from.id, limit) as (ApprovalSql & { at: string })[];
  return rows.map((r) => ({ ...toApprovalForWebhook(r), at: r.at }));
}

/** Runs that ended at or after `since` (ISO), oldest end first, after the (endedAt, id) cursor. */
export function runsEndedSince(
  store: Store,
  since: string,
  after: { endedAt: string; id: string } | undefined,
  limit: number,
): { id: string; sessionId: string; endedAt: string }[] {
  const from = after ?? { endedAt: since, id: '' };
  return dbOf(store)
    .prepare(
      'SELECT id, session_id AS sessionId, ended_at AS endedAt FROM runs WHERE ended_at >= ? ' +
        'AND (ended_at > ? OR id > ?) ORDER BY ended_at, id LIMIT ?',
    )
    .all(since, from.endedAt, from.id, limit) as { id: string; sessionId: string; endedAt: string }[];
}

/** Move a registration's sweep cursor forward (never back). */
export function advanceSweep(store: Store, webhookId: string, to: string): void {
  const db = dbOf(store);
  db.prepare(`UPDATE webhooks SET swept_to = ${larger(dialectOf(db), 'swept_to', '?')} WHERE id = ?`).run(
    to,
    webhookId,
  );
}

/**
 * Claim up to `limit` due pending deliveries for `worker` until `leaseUntil` (unix ms), in one write
 * transaction: a row another worker holds with a live lease is not due for anyone else.
 */
export function claimDue(store: Store, worker: string, now: number, leaseUntil: number, limit: number) {
  return store.transaction(
    () =>
      dbOf(store)
        .prepare(
          'UPDATE webhook_deliveries SET claimed_by = ?, claimed_until = ? WHERE id IN (' +
            "SELECT id FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at <= ? " +
            'AND (claimed_until IS NULL OR claimed_until < ?) ORDER BY next_attempt_at, id LIMIT ?) ' +
            'RETURNING id, webhook_id AS webhookId, body, attempts, ' +
            '(SELECT url FROM webhooks w WHERE w.id = webhook_id) AS url, ' +
            '(SELECT secret FROM webhooks w WHERE w.id = webhook_id) AS secret',
        )
        .all(worker, leaseUntil, now, now, limit) as ClaimedDelivery[],
  );
}

/** The earliest next attempt (unix ms) of any pending delivery, or undefined. */
export function nextDue(store: Store): number | undefined {
  const at = dbOf(store)
    .prepare("SELECT min(next_attempt_at) FROM webhook_deliveries WHERE state = 'pending'")
    .pluck()
    .get() as number | null;
  return at ?? undefined;
}

/**
 * Record one attempt of a delivery `worker` holds and its new state, in one transaction. False (and
 * nothing written) when the worker no longer holds the claim.
 */
export function recordAttempt(
  store: Store,
  worker: string,
  a: {
    deliveryId: string;
    attempt: number;
    at: string;
    status: number | null;
    error: string | null;
    durationMs: number;
    state: 'pending' | 'delivered' | 'failed';
    nextAttemptAt: number;
  },
): boolean {
  return store.transaction(() => {
    const db = dbOf(store);
    const changed = db
      .prepare(
        'UPDATE webhook_deliveries SET attempts = ?, state = ?, last_status = ?, last_error = ?, ' +
          'next_attempt_at = ?, updated_at = ?, claimed_by = NULL, claimed_until = NULL ' +
          "WHERE id = ? AND claimed_by = ? AND state = 'pending'",
      )
      .run(a.attempt, a.state, a.status, a.error, a.nextAttemptAt, a.at, a.deliveryId, worker).changes;
    if (changed === 0) return false;
    db.prepare(
      'INSERT INTO webhook_attempts (delivery_id, attempt, at, status, error, duration_ms) VALUES (?, ?, ?, ?, ?, ?)',
    ).run(a.deliveryId, a.attempt, a.at, a.status, a.error, a.durationMs);
    return true;
  });
}

/** A registration's deliveries, newest first. */
export function deliveriesOf(store: Store, webhookId: string, limit = 100): DeliveryRow[] {
  return dbOf(store)
    .prepare(
      `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE webhook_id = ? ORDER BY created_at DESC, id LIMIT ?`,
    )
    .all(webhookId, limit) as DeliveryRow[];
}

/** One delivery with its stored body. */
export function deliveryById(store: Store, id: string): (DeliveryRow & { body: string }) | undefined {
  return dbOf(store).prepare(`SELECT ${DELIVERY_COLUMNS}, body FROM webhook_deliveries WHERE id = ?`).get(id) as
    (DeliveryRow & { body: string }) | undefined;
}

/** A delivery's attempts, in order. */
export function attemptsOf(store: Store, deliveryId: string): AttemptRow[] {
  return dbOf(store)
    .prepare(
      'SELECT attempt, at, status, error, duration_ms AS durationMs FROM webhook_attempts WHERE delivery_id = ? ' +
        'ORDER BY attempt',
    )
    .all(deliveryId) as AttemptRow[];
}
