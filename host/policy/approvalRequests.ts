import { randomUUID } from 'node:crypto';
import type { ApprovalRequestParams, ApprovalRequestResult } from '../../sdk/protocol/types.js';
import type { HostRequestEntries } from '../rpc/hostRequestHandler.js';
import type { Action, CapabilityGrant, GrantLifetime, PolicyRule, Risk, Verdict } from './actions.js';
import { classifyRequest } from './classify.js';
import { evaluate } from './rules.js';

/** The run an approval belongs to, and the binding's policy as the run was planned with it. */
export interface ApprovalRunContext {
  tenant: string;
  bindingId: string;
  sessionId: string;
  runId: string;
  goalRevision: number;
  runnerId: string;
  sandbox: 'bwrap' | 'process';
  workspaceRoot: string;
  rules: PolicyRule[];
  approvalPolicy: 'ask' | 'deny';
  timeoutMs: number;
  networkAllow: string[];
}

/** An approval as it is asked: what the store keeps and the session's stream shows. */
export interface PendingApproval {
  id: string;
  action: Action;
  risk: Risk;
  requestedLifetime: GrantLifetime;
  goalRevision: number;
  createdAt: string;
  expiresAt: string;
}

/** Where an approval's decision stands, read fresh from the store. */
export interface ApprovalState {
  status: 'pending' | 'approved' | 'denied' | 'expired' | 'void';
  decidedBy?: string;
  reason?: string;
  grantId?: string;
}

/** The answer to one action, as the run's journal records it (`approval.decided`). */
export interface ApprovalAnswer {
  approvalId?: string;
  action: Action;
  decision: 'approved' | 'denied';
  by: string;
  reason: string;
  grantId?: string;
}

/** What the approval flow needs from the store and the run's journal (the run pipeline wires it). */
export interface ApprovalPort {
  /** The capability grants that may cover an action of this run now. */
  liveGrants(now: Date): CapabilityGrant[];
  /** Use up a `once` grant; false when it was used (or revoked) meanwhile. */
  useOnceGrant(id: string, at: string): boolean;
  /** Store a pending approval and record `approval.requested` (one transaction). */
  request(pending: PendingApproval): void;
  /** The approval's state now (another process may have decided it). */
  state(id: string): ApprovalState | undefined;
  /** Expire it if it is still pending (`at` is past its expiry); its state after. */
  expire(id: string, at: string): ApprovalState | undefined;
  /** Void it if it is still pending (the run is over); its state after. */
  void(id: string, at: string, why: string): ApprovalState | undefined;
  /** Record the answer (`approval.decided`, audited). */
  decided(answer: ApprovalAnswer): void;
}

/** Options of the flow (tests shorten the poll; production polls every 200 ms, as run controls are). */
export interface ApprovalFlowOptions {
  pollMs?: number;
  now?: () => Date;
}

/** Who decided, in words, from the verdict's own mechanism (what the runner and the audit record are told). */
export function describeVerdict(verdict: Verdict): { by: string; reason: string } {
  const d = verdict.decidedBy;
  const what = `${verdict.action.effect} ${verdict.action.target.kind} ${JSON.stringify(verdict.action.target.value)}`;
  switch (d.kind) {
    case 'rule': {
      const why = d.rule.why ? ` (${d.rule.why})` : '';
      return {
        by: `binding rule ${d.index + 1}`,
        reason: `${what}: ${verdict.decision} by the binding's rule ${d.index + 1}${why}`,
      };
    }
    case 'grant':
      return { by: `grant ${d.grantId}`, reason: `${what}: allowed by capability grant ${d.grantId}` };
    case 'default':
      return { by: 'host default', reason: `${what}: ${verdict.decision} by the host's default (${d.why})` };
    case 'floor':
      return { by: 'host floor', reason: `${what}: ${verdict.decision} by the host's floor (${d.why})` };
    case 'taint':
      return { by: 'taint', reason: `${what}: ${verdict.decision} because the run is tainted (${d.why})` };
  }
}

/** The lifetime a runner asked for, as a grant lifetime. */
function requestedLifetime(scope: ApprovalRequestParams['scope']): GrantLifetime {
  return scope ?? 'once';
}

/**
 * `approval/request`, served (docs/approvals.md, "The approval flow"): the host classifies the action itself, the
 * binding's rules, the host's defaults and floors, taint and live capability grants decide; an `ask` waits for a
 * person (or the binding's timeout, which denies) without holding anything but the runner's request.
 */
export function approvalRequests(
  ctx: ApprovalRunContext,
  port: ApprovalPort,
  options: ApprovalFlowOptions = {},
): HostRequestEntries {
  const now = options.now ?? (() => new Date());
  const pollMs = options.pollMs ?? 200;
  return {
    'approval/request': async (params, scope): Promise<ApprovalRequestResult> => {
      const request = params as ApprovalRequestParams;
      const action = classifyRequest(
        { effect: request.action.effect, target: request.action.target },
        `runner:${ctx.runnerId}`,
        { workspaceRoot: ctx.workspaceRoot },
      );
      action.summary = request.action.summary;
      const verdict = decide(ctx, port, action, now());
      if (verdict.decision !== 'ask') {
        const { by, reason } = describeVerdict(verdict);
        const grantId = verdict.decidedBy.kind === 'grant' ? verdict.decidedBy.grantId : undefined;
        const decision = verdict.decision === 'allow' ? 'approved' : 'denied';
        port.decided({ action, decision, by, reason, ...(grantId ? { grantId } : {}) });
        return { decision, reason, decidedBy: by, ...(grantId ? { grantId } : {}) };
      }
      const createdAt = now();
      const pending: PendingApproval = {
        id: `apr_${randomUUID()}`,
        action,
        risk: verdict.risk,
        requestedLifetime: requestedLifetime(request.scope),
        goalRevision: ctx.goalRevision,
        createdAt: createdAt.toISOString(),
        expiresAt: new Date(createdAt.getTime() + ctx.timeoutMs).toISOString(),
      };
      port.request(pending);
      const final = await waitForDecision(port, pending, scope.signal, pollMs, now);
      port.decided({ approvalId: pending.id, action, ...final });
      return {
        decision: final.decision,
        reason: final.reason,
        decidedBy: final.by,
        ...(final.grantId ? { grantId: final.grantId } : {}),
      };
    },
  };
}

/**
 * The policy's verdict, with a `once` grant used up in the same step: when another run used it first, the action is
 * decided again without it (it asks).
 */
function decide(ctx: ApprovalRunContext, port: ApprovalPort, action: Action, at: Date): Verdict {
  const evaluateWith = (grants: CapabilityGrant[]) =>
    evaluate(action, {
      rules: ctx.rules,
      grants,
      approvalPolicy: ctx.approvalPolicy,
      networkAllow: ctx.networkAllow,
      sandbox: ctx.sandbox,
      now: at,
      tenant: ctx.tenant,
      bindingId: ctx.bindingId,
      sessionId: ctx.sessionId,
      runId: ctx.runId,
    });
  let grants = port.liveGrants(at);
  for (;;) {
    const verdict = evaluateWith(grants);
    if (verdict.decidedBy.kind !== 'grant') return verdict;
    const grantId = verdict.decidedBy.grantId;
    const grant = grants.find((g) => g.id === grantId);
    if (grant?.lifetime !== 'once' || port.useOnceGrant(grantId, at.toISOString())) return verdict;
    grants = grants.filter((g) => g.id !== grantId);
  }
}

/** Wait until a person decides, the approval expires, or the run ends (which voids it). */
async function waitForDecision(
  port: ApprovalPort,
  pending: PendingApproval,
  signal: AbortSignal | undefined,
  pollMs: number,
  now: () => Date,
): Promise<Omit<ApprovalAnswer, 'approvalId' | 'action'>> {
  const expiresAt = Date.parse(pending.expiresAt);
  for (;;) {
    const state = settle(port, pending, signal, now, expiresAt);
    if (state) return state;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, Math.max(1, Math.min(pollMs, expiresAt - now().getTime() + 1)));
      signal?.addEventListener('abort', done, { once: true });
      function done() {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      }
    });
  }
}

/** The approval's answer if it has one now (deciding expiry and the run's end here), else undefined. */
function settle(
  port: ApprovalPort,
  pending: PendingApproval,
  signal: AbortSignal | undefined,
  now: () => Date,
  expiresAt: number,
): Omit<ApprovalAnswer, 'approvalId' | 'action'> | undefined {
  const at = now();
  let state = port.state(pending.id);
  if (state?.status === 'pending' && signal?.aborted) state = port.void(pending.id, at.toISOString(), 'the run ended');
  if (state?.status === 'pending' && at.getTime() >= expiresAt) state = port.expire(pending.id, at.toISOString());
  if (!state) return { decision: 'denied', by: 'host', reason: `approval ${pending.id} is gone from the store` };
  switch (state.status) {
    case 'pending':
      return undefined;
    case 'approved':
      return {
        decision: 'approved',
        by: state.decidedBy ?? 'approver',
        reason: state.reason ?? `approved by ${state.decidedBy ?? 'an approver'}`,
        ...(state.grantId ? { grantId: state.grantId } : {}),
      };
    case 'denied':
      return {
        decision: 'denied',
        by: state.decidedBy ?? 'approver',
        reason: state.reason ?? `denied by ${state.decidedBy ?? 'an approver'}`,
      };
    case 'expired':
      return { decision: 'denied', by: 'host', reason: `nobody decided within ${timeoutWords(pending)}: denied` };
    case 'void':
      return { decision: 'denied', by: 'host', reason: 'the run ended before anybody decided' };
  }
}

function timeoutWords(pending: PendingApproval): string {
  const ms = Date.parse(pending.expiresAt) - Date.parse(pending.createdAt);
  return ms % 60_000 === 0 ? `${ms / 60_000} min` : `${Math.round(ms / 1000)} s`;
}
