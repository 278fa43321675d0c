/**
 * Approval metrics per binding (docs/approvals.md §8), computed from what the store records: the `approvals` table
 * (asked, approved, denied, expired, void, and the time a person took), the runs' `approval.decided` events without
 * an approval (the binding's policy or a grant answered at once) and the `capability_grants` table (grants revoked
 * after they were used). `/metrics` and `paddock approvals stats` read the same figures.
 */
import { dialectOf } from './db.js';
import { elapsedMs, jsonText } from './dialectSql.js';
import { dbOf, type Store } from './store.js';

/** The outcomes `paddock_approvals_total{outcome}` counts; `asked` is every approval a person was asked for. */
export const APPROVAL_OUTCOMES = [
  'asked',
  'approved',
  'denied',
  'expired',
  'void',
  'auto_allowed_by_grant',
  'allowed_by_policy',
  'denied_by_policy',
] as const;
/** One outcome. */
export type ApprovalOutcome = (typeof APPROVAL_OUTCOMES)[number];

/** One binding's figures (of one tenant). */
export interface BindingApprovalStats {
  tenant: string;
  bindingId: string;
  /** Each outcome's count; `asked` = approved + denied + expired + void + still pending. */
  outcomes: Record<ApprovalOutcome, number>;
  /** Approvals still waiting for a person. */
  pending: number;
  /** Capability grants revoked (any), and those revoked after they allowed at least one action. */
  grantsRevoked: number;
  grantsRevokedAfterUse: number;
  /** Median milliseconds from the ask to a person's decision (approved or denied); null when none was decided. */
  medianDecisionMs: number | null;
}

/** What {@link approvalStats} counts: every tenant unless `tenant`, every binding unless `bindingId`. */
export interface ApprovalStatsQuery {
  tenant?: string;
  bindingId?: string;
  /** Only what happened at or after this instant (ISO 8601): asks by creation, answers by time, revocations. */
  since?: string;
  /** Compute {@link BindingApprovalStats.medianDecisionMs} (reads every decided approval's times; default true). */
  median?: boolean;
}

/** The `WHERE` of one query: its clauses and their arguments, `column` names per filter. */
function where(q: ApprovalStatsQuery, cols: { tenant: string; binding: string; at: string }) {
  const clauses: string[] = [];
  const args: unknown[] = [];
  const add = (clause: string, arg: unknown) => {
    clauses.push(clause);
    args.push(arg);
  };
  if (q.tenant !== undefined) add(`${cols.tenant} = ?`, q.tenant);
  if (q.bindingId !== undefined) add(`${cols.binding} = ?`, q.bindingId);
  if (q.since !== undefined) add(`${cols.at} >= ?`, q.since);
  return { sql: clauses.map((c) => ` AND ${c}`).join(''), args };
}

/** A run's binding as the policy answers name it: an ad-hoc run has none (`none`, as the run metrics say). */
const RUN_BINDING = "coalesce(r.binding_id, 'none')";

/**
 * Per tenant and binding, sorted by tenant then binding: each outcome's count, pending asks, revoked grants and the
 * median time to a person's decision. Bindings with nothing recorded are absent.
 */
export function approvalStats(store: Store, q: ApprovalStatsQuery = {}): BindingApprovalStats[] {
  const db = dbOf(store);
  const dialect = dialectOf(db);
  const field = (column: string, key: string) => jsonText(dialect, column, key);
  const byKey = new Map<string, BindingApprovalStats>();
  const entry = (tenant: string, bindingId: string): BindingApprovalStats => {
    const key = JSON.stringify([tenant, bindingId]);
    let e = byKey.get(key);
    if (!e) {
      const outcomes = Object.fromEntries(APPROVAL_OUTCOMES.map((o) => [o, 0])) as Record<ApprovalOutcome, number>;
      e = {
        tenant,
        bindingId,
        outcomes,
        pending: 0,
        grantsRevoked: 0,
        grantsRevokedAfterUse: 0,
        medianDecisionMs: null,
      };
      byKey.set(key, e);
    }
    return e;
  };

  const asked = where(q, { tenant: 'tenant', binding: 'binding_id', at: 'created_at' });
  const statuses = db
    .prepare(
      'SELECT tenant, binding_id AS bindingId, status, count(*) AS n FROM approvals WHERE 1 = 1' +
        `${asked.sql} GROUP BY tenant, binding_id, status`,
    )
    .all(...asked.args) as { tenant: string; bindingId: string; status: string; n: number }[];
  for (const s of statuses) {
    const e = entry(s.tenant, s.bindingId);
    e.outcomes.asked += s.n;
    if (s.status === 'pending') e.pending += s.n;
    else e.outcomes[s.status as ApprovalOutcome] += s.n;
  }

  // Answers without an approval: the policy (a rule, a default, a floor, taint, approvalPolicy deny) or a grant.
  // count … FILTER, not sum(<boolean>): PostgreSQL sums no booleans (both dialects have FILTER).
  const answered = where(q, { tenant: 's.tenant', binding: RUN_BINDING, at: 'e.at' });
  const grantId = field('e.data', 'grantId');
  const decision = field('e.data', 'decision');
  const answers = db
    .prepare(
      `SELECT s.tenant AS tenant, ${RUN_BINDING} AS bindingId, ` +
        `count(*) FILTER (WHERE ${grantId} IS NOT NULL) AS byGrant, ` +
        `count(*) FILTER (WHERE ${grantId} IS NULL AND ${decision} = 'approved') AS allowed, ` +
        `count(*) FILTER (WHERE ${grantId} IS NULL AND ${decision} = 'denied') AS denied ` +
        'FROM events e JOIN runs r ON r.id = e.run_id JOIN sessions s ON s.id = e.session_id ' +
        `WHERE e.type = 'approval.decided' AND ${field('e.data', 'approvalId')} IS NULL` +
        `${answered.sql} GROUP BY 1, 2`,
    )
    .all(...answered.args) as { tenant: string; bindingId: string; byGrant: number; allowed: number; denied: number }[];
  for (const a of answers) {
    const e = entry(a.tenant, a.bindingId);
    e.outcomes.auto_allowed_by_grant += a.byGrant;
    e.outcomes.allowed_by_policy += a.allowed;
    e.outcomes.denied_by_policy += a.denied;
  }

  // A grant was used when a `once` grant was used up, or an action was allowed by it before its revocation.
  const revoked = where(q, { tenant: 'g.tenant', binding: 'g.binding_id', at: 'g.revoked_at' });
  const grants = db
    .prepare(
      'SELECT g.tenant AS tenant, g.binding_id AS bindingId, count(*) AS revoked, ' +
        'count(*) FILTER (WHERE g.used_at IS NOT NULL OR EXISTS (SELECT 1 FROM events e WHERE e.type = ' +
        `'approval.decided' AND ${grantId} = g.id AND ${field('e.data', 'by')} = ` +
        "'grant ' || g.id AND e.at <= g.revoked_at)) AS afterUse " +
        `FROM capability_grants g WHERE g.revoked_at IS NOT NULL${revoked.sql} GROUP BY 1, 2`,
    )
    .all(...revoked.args) as { tenant: string; bindingId: string; revoked: number; afterUse: number }[];
  for (const g of grants) {
    const e = entry(g.tenant, g.bindingId);
    e.grantsRevoked += g.revoked;
    e.grantsRevokedAfterUse += g.afterUse;
  }

  if (q.median ?? true) {
    const decided = db
      .prepare(
        'SELECT tenant, binding_id AS bindingId, ' +
          `${elapsedMs(dialect, 'created_at', 'decided_at')} AS ms ` +
          `FROM approvals WHERE status IN ('approved', 'denied')${asked.sql} ORDER BY tenant, binding_id, ms`,
      )
      .all(...asked.args) as { tenant: string; bindingId: string; ms: number }[];
    const groups = new Map<BindingApprovalStats, number[]>();
    for (const d of decided) {
      const e = entry(d.tenant, d.bindingId);
      const ms = groups.get(e);
      if (ms) ms.push(d.ms);
      else groups.set(e, [d.ms]);
    }
    for (const [e, ms] of groups) e.medianDecisionMs = median(ms);
  }

  return [...byKey.values()].sort((a, b) =>
    a.tenant === b.tenant ? a.bindingId.localeCompare(b.bindingId) : a.tenant.localeCompare(b.tenant),
  );
}

/** The median of sorted numbers (the mean of the middle two for an even count). */
function median(sorted: number[]): number {
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : Math.round((sorted[mid - 1]! + sorted[mid]!) / 2);
}
