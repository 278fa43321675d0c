// `paddock approvals list|approve|deny` and `paddock grants list|revoke` (docs/approvals.md §3–§4): the operator's
// side of approvals, on the data folder directly (every tenant's). Runner text (summaries, targets) is shown through
// terminalSafe: an approval's words never act on the operator's terminal.
import type { HostConfig } from '../../config/hostConfig.js';
import { HostError } from '../../errors.js';
import type { GrantLifetime } from '../../policy/actions.js';
import {
  APPROVAL_STATUSES,
  decideApproval,
  decideApprovalGroup,
  listApprovals,
  type DecideResult,
  type ApprovalRow,
  type ApprovalStatus,
} from '../../state/approvals.js';
import { approvalStats, type BindingApprovalStats } from '../../state/approvalStats.js';
import {
  GRANT_LIFETIMES,
  listCapabilityGrants,
  revokeCapabilityGrant,
  type CapabilityGrantRow,
} from '../../state/capabilityGrants.js';
import { openHostState } from '../../start.js';
import { terminalSafe } from '../../util/terminalText.js';

type Out = (text: string) => void;

/** A UTC instant (`--since`): a date, or a date and time ending in `Z`. */
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?Z)?$/;

/** Rows read per page when a list walks the whole table. */
const PAGE = 500;

/** The flags of both command groups. */
export interface ApprovalsFlags {
  json: boolean;
  status?: string;
  run?: string;
  lifetime?: string;
  reason?: string;
  binding?: string;
  all?: boolean;
  by?: string;
  /** approve/deny: the approval's whole group. */
  group?: boolean;
  since?: string;
}

/** Every page of a keyset list, walked to its end. */
function walk<T extends { id: string }>(page: (after: string | undefined) => T[]): T[] {
  const all: T[] = [];
  for (let rows = page(undefined); ; rows = page(rows.at(-1)!.id)) {
    all.push(...rows);
    if (rows.length < PAGE) return all;
  }
}

/** One line of an approval for a terminal (every field escaped: summaries and targets are a runner's words). */
export function approvalLine(a: ApprovalRow, now = new Date().toISOString()): string {
  const status = a.status === 'pending' && a.expiresAt <= now ? 'pending (past its expiry)' : a.status;
  const decided = a.decidedBy ? ` · ${a.status} by ${a.decidedBy} at ${a.decidedAt}` : '';
  return terminalSafe(
    `${a.id}  ${status.padEnd(8)} ${`${a.risk.level}(${a.risk.score})`.padEnd(11)} ${a.effect} ` +
      `${a.target.kind}:${a.target.value}  run ${a.runId} · ${a.tenant}/${a.bindingId} · ` +
      `asks ${a.requestedLifetime} · expires ${a.expiresAt}${decided} — ${JSON.stringify(a.summary.slice(0, 200))}`,
  );
}

/** One line of a capability grant for a terminal. */
export function grantLine(g: CapabilityGrantRow): string {
  const state = g.revokedAt
    ? `revoked ${g.revokedAt} by ${g.revokedBy}`
    : g.usedAt
      ? `used ${g.usedAt}`
      : g.expiresAt
        ? `expires ${g.expiresAt}`
        : 'live';
  const of = g.lifetime === 'binding' ? '' : g.lifetime === 'session' ? ` ${g.sessionId}` : ` ${g.runId}`;
  return terminalSafe(
    `${g.id}  ${g.capability} ${g.scope.kind}:${g.scope.value}  ${g.lifetime}${of} · ${g.tenant}/${g.bindingId} · ` +
      `by ${g.grantor} · ${state}`,
  );
}

/** A duration in words (`850 ms`, `42 s`, `3.5 min`). */
function durationWords(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 120_000) return `${Math.round(ms / 1000)} s`;
  return `${Math.round(ms / 6000) / 10} min`;
}

/** The lines of one binding's approval figures for a terminal. */
export function statsLines(s: BindingApprovalStats): string[] {
  const o = s.outcomes;
  return [
    terminalSafe(`${s.tenant}/${s.bindingId}`),
    `  asked ${o.asked}: approved ${o.approved} · denied ${o.denied} · expired ${o.expired} · void ${o.void} · ` +
      `pending ${s.pending}`,
    `  answered at once: allowed by policy ${o.allowed_by_policy} · denied by policy ${o.denied_by_policy} · ` +
      `auto-allowed by a grant ${o.auto_allowed_by_grant}`,
    `  grants revoked ${s.grantsRevoked} (after use ${s.grantsRevokedAfterUse}) · median time to a decision ` +
      (s.medianDecisionMs === null ? 'none decided' : durationWords(s.medianDecisionMs)),
  ];
}

/** Print `value` as JSON, escaped for the terminal (still the same JSON). */
const json = (out: Out, value: unknown) => out(terminalSafe(JSON.stringify(value)));

/**
 * `paddock approvals list|approve|deny|stats`. Exit 0 done; 1 the approval could not be decided (its state is said).
 */
export async function approvalsCommand(
  config: HostConfig,
  verb: 'list' | 'approve' | 'deny' | 'stats',
  args: string[],
  flags: ApprovalsFlags,
  out: Out,
  err: Out,
): Promise<number> {
  const by = `user:${flags.by ?? process.env.USER ?? 'operator'}`;
  // Checked before the store opens: a usage mistake changes nothing.
  if (flags.status !== undefined && !(APPROVAL_STATUSES as readonly string[]).includes(flags.status))
    throw new HostError(
      'INVALID_INPUT',
      `--status must be one of ${APPROVAL_STATUSES.join(', ')} (got ${JSON.stringify(flags.status.slice(0, 40))})`,
    );
  if (flags.lifetime !== undefined && !GRANT_LIFETIMES.includes(flags.lifetime as GrantLifetime))
    throw new HostError(
      'INVALID_INPUT',
      `--lifetime must be one of ${GRANT_LIFETIMES.join(', ')} (got ${JSON.stringify(flags.lifetime.slice(0, 40))})`,
    );
  if (flags.since !== undefined && (!ISO_INSTANT.test(flags.since) || Number.isNaN(Date.parse(flags.since))))
    throw new HostError(
      'INVALID_INPUT',
      `--since must be an ISO 8601 UTC instant like 2026-01-31T00:00:00Z ` +
        `(got ${JSON.stringify(flags.since.slice(0, 40))})`,
    );
  const { store } = await openHostState(config);
  try {
    if (verb === 'stats') {
      const since = flags.since === undefined ? undefined : new Date(flags.since).toISOString();
      const rows = approvalStats(store, {
        ...(flags.binding !== undefined ? { bindingId: flags.binding } : {}),
        ...(since !== undefined ? { since } : {}),
      });
      if (flags.json) json(out, rows);
      else if (rows.length === 0)
        out(
          `no approvals recorded${flags.binding ? ` for binding ${terminalSafe(flags.binding)}` : ''}` +
            `${since ? ` since ${since}` : ''}`,
        );
      else for (const row of rows) for (const line of statsLines(row)) out(line);
      return 0;
    }
    if (verb === 'list') {
      const rows = walk((after) =>
        listApprovals(store, {
          status: flags.status as ApprovalStatus | undefined,
          runId: flags.run,
          limit: PAGE,
          after,
        }),
      );
      if (flags.json) json(out, rows);
      else if (rows.length === 0) out(`no ${flags.status ?? ''} approvals`.replace('  ', ' '));
      else for (const row of rows) out(approvalLine(row));
      return 0;
    }
    const id = args[0]!;
    const decide = flags.group ? decideApprovalGroup : decideApproval;
    const result: DecideResult & { others?: ApprovalRow[] } = decide(store, id, {
      outcome: verb === 'approve' ? 'approved' : 'denied',
      by,
      at: new Date().toISOString(),
      ...(flags.reason !== undefined ? { reason: flags.reason } : {}),
      ...(verb === 'approve' && flags.lifetime !== undefined ? { lifetime: flags.lifetime as GrantLifetime } : {}),
    });
    if (!result.ok && result.code === 'not_found') throw new HostError('NOT_FOUND', `no approval ${id}`);
    if (flags.json) {
      json(out, result);
      return result.ok ? 0 : 1;
    }
    if (result.ok) {
      const { row, grant } = result;
      out(
        terminalSafe(
          `approval ${row.id} ${row.status} by ${by}: ${row.effect} ${row.target.kind}:${row.target.value}` +
            (grant ? `; grant ${grant.id} (${grant.lifetime})` : verb === 'approve' ? ' (this once)' : ''),
        ),
      );
      for (const other of result.others ?? [])
        out(terminalSafe(`  and ${other.id} (same group): ${other.effect} ${other.target.kind}:${other.target.value}`));
      return 0;
    }
    const { row } = result;
    if (result.code === 'wider_than_asked')
      err(
        `paddock: --lifetime ${flags.lifetime} is wider than approval ${row.id} asked for ` +
          `(at most ${row.requestedLifetime}); nothing decided`,
      );
    else if (result.code === 'expired')
      err(`paddock: approval ${row.id} expired at ${row.expiresAt}, before this decision; nothing decided`);
    else if (result.code === 'run_ended')
      err(`paddock: approval ${row.id} belongs to a run that is over: now void; nothing decided`);
    else if (result.code === 'superseded')
      err(`paddock: approval ${row.id} was asked under an older goal (a newer message superseded it): now void`);
    else
      err(
        terminalSafe(
          `paddock: approval ${row.id} is not pending: it is ${row.status} (by ${row.decidedBy} at ${row.decidedAt}` +
            `${row.reason ? `: ${row.reason}` : ''}); nothing decided`,
        ),
      );
    return 1;
  } finally {
    store.close();
  }
}

/** `paddock grants list|revoke`. Exit 0 done; 1 the grant was already revoked. */
export async function grantsCommand(
  config: HostConfig,
  verb: 'list' | 'revoke',
  args: string[],
  flags: ApprovalsFlags,
  out: Out,
  err: Out,
): Promise<number> {
  const by = `user:${flags.by ?? process.env.USER ?? 'operator'}`;
  const { store } = await openHostState(config);
  try {
    if (verb === 'list') {
      const now = new Date().toISOString();
      const rows = walk((after) =>
        listCapabilityGrants(store, { bindingId: flags.binding, live: flags.all !== true, now, limit: PAGE, after }),
      );
      if (flags.json) json(out, rows);
      else if (rows.length === 0) out(flags.all ? 'no grants' : 'no live grants (--all lists every grant)');
      else for (const row of rows) out(grantLine(row));
      return 0;
    }
    const id = args[0]!;
    const result = revokeCapabilityGrant(store, id, { by, at: new Date().toISOString() });
    if (!result.ok && result.code === 'not_found') throw new HostError('NOT_FOUND', `no grant ${id}`);
    if (flags.json) json(out, result);
    else if (result.ok) out(terminalSafe(`grant ${id} revoked by ${by}: ${grantLine(result.grant)}`));
    else
      err(
        terminalSafe(
          `paddock: grant ${id} was already revoked (${result.grant.revokedAt} by ${result.grant.revokedBy})`,
        ),
      );
    return result.ok ? 0 : 1;
  } finally {
    store.close();
  }
}
