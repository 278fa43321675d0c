import type { ApprovalPort, ApprovalState, PendingApproval } from '../policy/approvalRequests.js';
import type { Redactor } from '../secrets/redactor.js';
import {
  approvalById,
  expireApprovals,
  insertApproval,
  MAX_SUMMARY_CHARS,
  voidApprovals,
  type ApprovalRow,
} from '../state/approvals.js';
import { liveCapabilityGrants, useOnceGrant } from '../state/capabilityGrants.js';
import type { Store } from '../state/store.js';
import type { OpenRunJournal } from './journal.js';

/** What one run's approval flow is wired to. */
export interface ApprovalPortDeps {
  store: Store;
  redactor: Redactor;
  journal: OpenRunJournal;
  tenant: string;
  bindingId: string;
  sessionId: string;
  runId: string;
}

function stateOf(row: ApprovalRow | undefined): ApprovalState | undefined {
  if (!row) return undefined;
  return {
    status: row.status,
    ...(row.decidedBy !== null ? { decidedBy: row.decidedBy } : {}),
    ...(row.reason !== null ? { reason: row.reason } : {}),
    ...(row.grantId !== null ? { grantId: row.grantId } : {}),
  };
}

/**
 * The approval flow of one run, on the store and the run's journal: approval rows and capability grants through
 * host/state, `approval.requested`/`approval.decided` through the journal. What a person sees (target, summary) is
 * redacted first: a command line may carry a secret the run was given.
 */
export function approvalPort(deps: ApprovalPortDeps): ApprovalPort {
  const { store, redactor, journal, tenant, bindingId, sessionId, runId } = deps;
  const shown = (text: string) => redactor.text(text);
  return {
    liveGrants: (now) => liveCapabilityGrants(store, { tenant, bindingId, sessionId, runId, now: now.toISOString() }),
    useOnceGrant: (id, at) => useOnceGrant(store, id, at),
    request: (pending: PendingApproval) => {
      const target = { kind: pending.action.target.kind, value: shown(pending.action.target.value) };
      const summary =
        pending.action.summary === undefined ? undefined : shown(pending.action.summary).slice(0, MAX_SUMMARY_CHARS);
      journal.approvalRequested(
        {
          approvalId: pending.id,
          effect: pending.action.effect,
          target,
          via: pending.action.via,
          ...(summary !== undefined ? { summary } : {}),
          risk: pending.risk,
          goalRevision: pending.goalRevision,
          expiresAt: pending.expiresAt,
        },
        () =>
          insertApproval(store, {
            id: pending.id,
            tenant,
            runId,
            sessionId,
            bindingId,
            via: pending.action.via,
            effect: pending.action.effect,
            target,
            summary: summary ?? '',
            dataClass: null,
            destination: null,
            risk: pending.risk,
            goalRevision: pending.goalRevision,
            groupId: null,
            requestedLifetime: pending.requestedLifetime,
            createdAt: pending.createdAt,
            expiresAt: pending.expiresAt,
          }),
      );
    },
    state: (id) => stateOf(approvalById(store, id)),
    expire: (id, at) => {
      expireApprovals(store, at);
      return stateOf(approvalById(store, id));
    },
    void: (id, at, why) => {
      voidApprovals(store, { runId }, at, why);
      return stateOf(approvalById(store, id));
    },
    decided: (answer) =>
      journal.approvalDecided({
        ...(answer.approvalId !== undefined ? { approvalId: answer.approvalId } : {}),
        effect: answer.action.effect,
        target: { kind: answer.action.target.kind, value: shown(answer.action.target.value) },
        decision: answer.decision,
        by: answer.by,
        reason: shown(answer.reason),
        ...(answer.grantId !== undefined ? { grantId: answer.grantId } : {}),
      }),
  };
}
