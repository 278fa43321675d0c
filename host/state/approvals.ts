/**
 * The `approvals` table (docs/approvals.md §4): actions a run asked for that wait for a person. A decision is one
 * transaction — only a pending approval not past its expiry can be decided, the capability grant an approval leaves
 * is exactly its effect and target and lives no longer than asked, and the audit record commits with it.
 * `approval_changes` numbers every status change, and wakes other connections' watchers (commitSignal.ts, topic
 * `approvals`): a run's host in another process or on another host hears a decision at once.
 */
import { randomUUID } from 'node:crypto';
import type { Effect, GrantLifetime, Risk, Scope } from '../policy/actions.js';
import { GRANT_LIFETIMES, insertCapabilityGrant, type CapabilityGrantRow } from './capabilityGrants.js';
import { lastGoalRevision } from './dispatchLog.js';
import { runOwnerGone } from './claims.js';
import { runStatus } from './recoveryReads.js';
import { dbOf, type Store } from './store.js';
import { notifyOthers } from './commitSignal.js';

/** Where an approval is. */
export const APPROVAL_STATUSES = ['pending', 'approved', 'denied', 'expired', 'void'] as const;
/** An approval's status. */
export type ApprovalStatus = (typeof APPROVAL_STATUSES)[number];

/** The most of a runner's summary kept (its own words: shown to approvers, never interpreted, never audited). */
export const MAX_SUMMARY_CHARS = 2_000;
/** The most of an approver's reason kept. */
export const MAX_REASON_CHARS = 1_000;

/** An approval as stored. */
export interface ApprovalRow {
  id: string;
  tenant: string;
  runId: string;
  sessionId: string;
  bindingId: string;
  /** Who asked, through what (`runner`, `claude-code:Bash`, `acp`, …). */
  via: string;
  effect: Effect;
  target: Scope;
  /** The runner's words (untrusted), clipped to {@link MAX_SUMMARY_CHARS}. */
  summary: string;
  dataClass: string | null;
  destination: string | null;
  risk: Risk;
  goalRevision: number;
  groupId: string | null;
  /** The longest lifetime a grant of this approval may have. */
  requestedLifetime: GrantLifetime;
  status: ApprovalStatus;
  createdAt: string;
  expiresAt: string;
  decidedAt: string | null;
  /** The approver (`user:<name>`, `api:<token>[/user:<by>]`), or `host` for an expiry or a void. */
  decidedBy: string | null;
  reason: string | null;
  grantId: string | null;
}

/** What {@link insertApproval} stores: a pending approval (its id made when not given). */
export type NewApproval = Omit<ApprovalRow, 'id' | 'status' | 'decidedAt' | 'decidedBy' | 'reason' | 'grantId'> & {
  id?: string;
};

interface ApprovalSqlRow {
  id: string;
  tenant: string;
  run_id: string;
  session_id: string;
  binding_id: string;
  via: string;
  effect: Effect;
  target_kind: Scope['kind'];
  target: string;
  summary: string;
  data_class: string | null;
  destination: string | null;
  risk_score: number;
  risk_level: Risk['level'];
  risk_reasons: string;
  goal_revision: number;
  group_id: string | null;
  requested_lifetime: GrantLifetime;
  status: ApprovalStatus;
  created_at: string;
  expires_at: string;
  decided_at: string | null;
  decided_by: string | null;
  reason: string | null;
  grant_id: string | null;
}

const toApproval = (r: ApprovalSqlRow): ApprovalRow => ({
  id: r.id,
  tenant: r.tenant,
  runId: r.run_id,
  sessionId: r.session_id,
  bindingId: r.binding_id,
  via: r.via,
  effect: r.effect,
  target: { kind: r.target_kind, value: r.target },
  summary: r.summary,
  dataClass: r.data_class,
  destination: r.destination,
  risk: { score: r.risk_score, level: r.risk_level, reasons: JSON.parse(r.risk_reasons) as string[] },
  goalRevision: r.goal_revision,
  groupId: r.group_id,
  requestedLifetime: r.requested_lifetime,
  status: r.status,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
  decidedAt: r.decided_at,
  decidedBy: r.decided_by,
  reason: r.reason,
  grantId: r.grant_id,
});

/** What an approval's audit records carry: what was asked and of whom, never the runner's summary text. */
function auditData(row: ApprovalRow): Record<string, unknown> {
  return {
    approvalId: row.id,
    tenant: row.tenant,
    bindingId: row.bindingId,
    via: row.via,
    effect: row.effect,
    target: row.target,
    risk: { score: row.risk.score, level: row.risk.level },
    goalRevision: row.goalRevision,
    // A tainted run's send: what it may carry, and where to (the one-time grant it needs records both).
    ...(row.dataClass !== null ? { dataClass: row.dataClass } : {}),
    ...(row.destination !== null ? { destination: row.destination } : {}),
  };
}

/** Number a status change for the pollers, and wake other connections' (inside the change's transaction). */
function noteChange(store: Store, row: { id: string; runId: string }, status: ApprovalStatus, at: string): void {
  dbOf(store)
    .prepare('INSERT INTO approval_changes (approval_id, run_id, status, at) VALUES (?, ?, ?, ?)')
    .run(row.id, row.runId, status, at);
  notifyOthers(dbOf(store), 'approvals', row.runId);
}

/** The approval `id` (of `tenant` when given). */
export function approvalById(store: Store, id: string, tenant?: string): ApprovalRow | undefined {
  const row = dbOf(store).prepare('SELECT * FROM approvals WHERE id = ?').get(id) as ApprovalSqlRow | undefined;
  if (!row || (tenant !== undefined && row.tenant !== tenant)) return undefined;
  return toApproval(row);
}

/**
 * Store a pending approval and audit it (`approval.requested`, actor `host`: the host classified the action), in one
 * transaction (joining the caller's). The summary is clipped; an expiry not after creation is `RangeError`.
 */
export function insertApproval(store: Store, approval: NewApproval): ApprovalRow {
  if (!(approval.expiresAt > approval.createdAt))
    throw new RangeError(`expiresAt (${approval.expiresAt}) must be after createdAt (${approval.createdAt})`);
  if (!GRANT_LIFETIMES.includes(approval.requestedLifetime))
    throw new RangeError(`requestedLifetime must be one of ${GRANT_LIFETIMES.join(', ')}`);
  const id = approval.id ?? `apr_${randomUUID()}`;
  return store.transaction(() => {
    dbOf(store)
      .prepare(
        'INSERT INTO approvals (id, tenant, run_id, session_id, binding_id, via, effect, target_kind, target, ' +
          'summary, data_class, destination, risk_score, risk_level, risk_reasons, goal_revision, group_id, ' +
          'requested_lifetime, status, created_at, expires_at) ' +
          "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?)",
      )
      .run(
        id,
        approval.tenant,
        approval.runId,
        approval.sessionId,
        approval.bindingId,
        approval.via,
        approval.effect,
        approval.target.kind,
        approval.target.value,
        approval.summary.slice(0, MAX_SUMMARY_CHARS),
        approval.dataClass,
        approval.destination,
        approval.risk.score,
        approval.risk.level,
        JSON.stringify(approval.risk.reasons),
        approval.goalRevision,
        approval.groupId,
        approval.requestedLifetime,
        approval.createdAt,
        approval.expiresAt,
      );
    const row = approvalById(store, id)!;
    noteChange(store, row, 'pending', row.createdAt);
    store.audit.append(
      {
        type: 'approval.requested',
        actor: 'host',
        sessionId: row.sessionId,
        runId: row.runId,
        data: { ...auditData(row), requestedLifetime: row.requestedLifetime, expiresAt: row.expiresAt },
      },
      row.createdAt,
    );
    return row;
  });
}

/**
 * A page of approvals in creation order, filtered by tenant, status and run. `after` is the last id of the previous
 * page; an id this filter does not see (another tenant's, say) is `RangeError` naming `after`.
 */
export function listApprovals(
  store: Store,
  q: {
    tenant?: string;
    status?: ApprovalStatus;
    runId?: string;
    limit: number;
    after?: string;
    /** `desc`: newest first (`after` then names the last approval of the previous, newer page). */
    order?: 'asc' | 'desc';
  },
): ApprovalRow[] {
  const desc = q.order === 'desc';
  const where: string[] = [];
  const args: unknown[] = [];
  const add = (clause: string, ...values: unknown[]) => {
    where.push(clause);
    args.push(...values);
  };
  if (q.tenant !== undefined) add('tenant = ?', q.tenant);
  if (q.status !== undefined) add('status = ?', q.status);
  if (q.runId !== undefined) add('run_id = ?', q.runId);
  if (q.after !== undefined) {
    const from = approvalById(store, q.after, q.tenant);
    if (!from) throw new RangeError(`after: no approval ${q.after}`);
    add(`(created_at, id) ${desc ? '<' : '>'} (?, ?)`, from.createdAt, from.id);
  }
  const sql =
    `SELECT * FROM approvals${where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''} ` +
    (desc ? 'ORDER BY created_at DESC, id DESC LIMIT ?' : 'ORDER BY created_at, id LIMIT ?');
  const rows = dbOf(store)
    .prepare(sql)
    .all(...args, q.limit) as ApprovalSqlRow[];
  // Handed out (API, CLI): on a shared store another host wrote them, redacted with its secrets only.
  return rows.map((row) => store.readRedacted(toApproval(row)));
}

/** A decision an approver makes. */
export interface ApprovalDecision {
  outcome: 'approved' | 'denied';
  /** The approver, as the audit actor. */
  by: string;
  at: string;
  reason?: string;
  /** How long the grant an approval leaves lives (default `once`: none; never longer than requested). */
  lifetime?: GrantLifetime;
  /** The decider's tenant: another tenant's approval is `not_found`. */
  tenant?: string;
}

/** The outcome of {@link decideApproval}; a refusal other than not_found carries the approval as it now is. */
export type DecideResult =
  | { ok: true; row: ApprovalRow; grant?: CapabilityGrantRow }
  | { ok: false; code: 'not_found' }
  | { ok: false; code: 'not_pending' | 'expired' | 'superseded' | 'run_ended' | 'wider_than_asked'; row: ApprovalRow };

/**
 * Approve or deny a pending approval, atomically: of every concurrent decider (any process) exactly one decides.
 * An approval past its expiry is turned `expired` (audited, actor `host`) and refused `expired`; a lifetime longer than
 * the approval's requested one is refused `wider_than_asked` (nothing changes). Approving with `run`, `session` or
 * `binding` creates a capability grant of exactly the approval's effect and target; `once` creates none (the waiting
 * action is allowed once). Audited (`approval.approved` / `approval.denied`, actor `by`).
 */
export function decideApproval(store: Store, id: string, decision: ApprovalDecision): DecideResult {
  const lifetime = decision.lifetime ?? 'once';
  if (!GRANT_LIFETIMES.includes(lifetime))
    throw new RangeError(`lifetime must be one of ${GRANT_LIFETIMES.join(', ')} (got ${JSON.stringify(lifetime)})`);
  return store.transaction((): DecideResult => {
    const row = approvalById(store, id, decision.tenant);
    if (!row) return { ok: false, code: 'not_found' };
    if (row.status !== 'pending') return { ok: false, code: 'not_pending', row };
    if (row.expiresAt <= decision.at) {
      const [expired] = expireRows(store, [row], decision.at);
      return { ok: false, code: 'expired', row: expired! };
    }
    // Its run is over (ended, or interrupted by a host stop and recovered): nothing is waiting for the answer, and
    // a grant made now would reach the session's next run (an outside attack did exactly that after a crash).
    // A run whose host process died holding it is over too, before any recovery notices (a second attack approved
    // such an approval through a `paddock serve` started before the crash).
    const runState = runStatus(store, row.runId);
    const over =
      runState !== undefined && runState !== 'queued' && runState !== 'running'
        ? `its run is over (${runState})`
        : runOwnerGone(store, row.runId)
          ? "its run's host process is gone"
          : undefined;
    if (over) {
      const [voided] = voidRows(store, [row], decision.at, over);
      return { ok: false, code: 'run_ended', row: voided! };
    }
    // A newer message changed the session's goal (steering): an approval asked under the old goal is void.
    if (lastGoalRevision(store, row.sessionId) > row.goalRevision) {
      const [voided] = voidRows(store, [row], decision.at, 'a newer message changed the goal it was asked under');
      return { ok: false, code: 'superseded', row: voided! };
    }
    if (
      decision.outcome === 'approved' &&
      GRANT_LIFETIMES.indexOf(lifetime) > GRANT_LIFETIMES.indexOf(row.requestedLifetime)
    )
      return { ok: false, code: 'wider_than_asked', row };
    const grant =
      decision.outcome === 'approved' && lifetime !== 'once'
        ? insertCapabilityGrant(store, {
            capability: row.effect,
            scope: row.target,
            lifetime,
            tenant: row.tenant,
            bindingId: row.bindingId,
            sessionId: row.sessionId,
            runId: row.runId,
            grantor: decision.by,
            approvalId: row.id,
            createdAt: decision.at,
          })
        : undefined;
    const reason = decision.reason === undefined ? null : decision.reason.slice(0, MAX_REASON_CHARS);
    dbOf(store)
      .prepare('UPDATE approvals SET status = ?, decided_at = ?, decided_by = ?, reason = ?, grant_id = ? WHERE id = ?')
      .run(decision.outcome, decision.at, decision.by, reason, grant?.id ?? null, id);
    noteChange(store, row, decision.outcome, decision.at);
    store.audit.append(
      {
        type: `approval.${decision.outcome}`,
        actor: decision.by,
        sessionId: row.sessionId,
        runId: row.runId,
        data: {
          ...auditData(row),
          ...(decision.outcome === 'approved' ? { lifetime, grantId: grant?.id ?? null } : {}),
          reason,
        },
      },
      decision.at,
    );
    const decided = approvalById(store, id)!;
    return grant ? { ok: true, row: decided, grant } : { ok: true, row: decided };
  });
}

/**
 * Decide `id` and, with it, every other pending approval of its group (the low-risk asks of one run, docs/approvals.md
 * §4), in one transaction: each is decided as {@link decideApproval} decides one (a lifetime wider than one asked
 * for leaves that one pending). The result is `id`'s; `others` lists the rest that were decided.
 */
export function decideApprovalGroup(
  store: Store,
  id: string,
  decision: ApprovalDecision,
): DecideResult & { others?: ApprovalRow[] } {
  return store.transaction(() => {
    const first = decideApproval(store, id, decision);
    if (!first.ok || first.row.groupId === null) return first;
    const rest = dbOf(store)
      .prepare(
        "SELECT id FROM approvals WHERE group_id = ? AND tenant = ? AND status = 'pending' AND id != ? " +
          'ORDER BY created_at, id',
      )
      .pluck()
      .all(first.row.groupId, first.row.tenant, id) as string[];
    const others = rest.map((other) => decideApproval(store, other, decision)).flatMap((r) => (r.ok ? [r.row] : []));
    return { ...first, others };
  });
}

/** Turn `rows` (pending) `expired`, audited with actor `host` (inside the caller's transaction). */
function expireRows(store: Store, rows: ApprovalRow[], at: string): ApprovalRow[] {
  const update = dbOf(store).prepare(
    "UPDATE approvals SET status = 'expired', decided_at = ?, decided_by = 'host' WHERE id = ? AND status = 'pending'",
  );
  return rows.map((row) => {
    update.run(at, row.id);
    noteChange(store, row, 'expired', at);
    store.audit.append(
      { type: 'approval.expired', actor: 'host', sessionId: row.sessionId, runId: row.runId, data: auditData(row) },
      at,
    );
    return approvalById(store, row.id)!;
  });
}

/** Every pending approval whose expiry is at or before `now` turned `expired` (audited, actor `host`); returns them. */
export function expireApprovals(store: Store, now: string): ApprovalRow[] {
  return store.transaction(() => {
    const due = dbOf(store)
      .prepare("SELECT * FROM approvals WHERE status = 'pending' AND expires_at <= ? ORDER BY created_at, id")
      .all(now) as ApprovalSqlRow[];
    return expireRows(store, due.map(toApproval), now);
  });
}

/**
 * The pending approvals of a run that ended (or the one named by `id`, whose request ended) turned `void` with
 * `why` as their reason (audited `approval.voided`, actor `host`): deciding them is refused `not_pending` from then
 * on, so a late decision never reaches a run.
 */
export function voidApprovals(
  store: Store,
  of: { runId: string; id?: string },
  at: string,
  why: string,
): ApprovalRow[] {
  return store.transaction(() => {
    const pending = dbOf(store)
      .prepare(
        // The CAST gives PostgreSQL the parameter's type (it cannot infer one from `? IS NULL`).
        "SELECT * FROM approvals WHERE run_id = ? AND status = 'pending' AND (CAST(? AS TEXT) IS NULL OR id = ?) " +
          'ORDER BY created_at, id',
      )
      .all(of.runId, of.id ?? null, of.id ?? null) as ApprovalSqlRow[];
    return voidRows(store, pending.map(toApproval), at, why);
  });
}

/** Turn `rows` (pending) `void`, audited with actor `host` (inside the caller's transaction). */
function voidRows(store: Store, rows: ApprovalRow[], at: string, why: string): ApprovalRow[] {
  const update = dbOf(store).prepare(
    "UPDATE approvals SET status = 'void', decided_at = ?, decided_by = 'host', reason = ? WHERE id = ?",
  );
  return rows.map((row) => {
    update.run(at, why, row.id);
    noteChange(store, row, 'void', at);
    store.audit.append(
      {
        type: 'approval.voided',
        actor: 'host',
        sessionId: row.sessionId,
        runId: row.runId,
        data: { ...auditData(row), why },
      },
      at,
    );
    return approvalById(store, row.id)!;
  });
}

/** One numbered status change of an approval. */
export interface ApprovalChange {
  seq: number;
  approvalId: string;
  runId: string;
  status: ApprovalStatus;
  at: string;
}

/** The newest change's seq (0 when none): where a poller starts. */
export function lastApprovalChange(store: Store): number {
  return dbOf(store).prepare('SELECT coalesce(max(seq), 0) FROM approval_changes').pluck().get() as number;
}

/**
 * Changes after `seq`, oldest first (of one run when given). Poll it when `store.commits.version('approvals')` moved
 * (commitSignal.ts): an idle check is then one pragma on SQLite, a memory read on PostgreSQL.
 */
export function approvalsChangedSince(store: Store, seq: number, runId?: string): ApprovalChange[] {
  const select = 'SELECT seq, approval_id AS approvalId, run_id AS runId, status, at FROM approval_changes';
  return (
    runId === undefined
      ? dbOf(store).prepare(`${select} WHERE seq > ? ORDER BY seq`).all(seq)
      : dbOf(store).prepare(`${select} WHERE seq > ? AND run_id = ? ORDER BY seq`).all(seq, runId)
  ) as ApprovalChange[];
}
