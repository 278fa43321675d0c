import { clip } from '../util/clip.js';
import {
  MAX_ASKED_TARGET_CHARS,
  RunPolicy,
  type ApprovalPort,
  type ApprovalState,
  type PendingApproval,
} from '../policy/runPolicy.js';
import { sandboxBackend } from '../sandbox/backend.js';
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
import type { OpenRunJournal, QueuedRun } from './journal.js';
import type { RunPlan } from './plan.js';

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
export function approvalPort(deps: ApprovalPortDeps): ApprovalPort & { forgetLearnt(): void } {
  const { store, redactor, journal, tenant, bindingId, sessionId, runId } = deps;
  const shown = (text: string) => redactor.text(text);
  // Values the run read from a secret file, held (counted) for as long as anything of the run may still be written;
  // a configured secret, or one another run holds too, outlives this run.
  const learnt = new Map<string, () => void>();
  return {
    containsSecret: (text, ignoreCase) =>
      ignoreCase ? redactor.containsIgnoringCase(text) : redactor.text(text) !== text,
    watchKnown: () => redactor.watchKnown(),
    learnSecret: (value) => {
      // A value that only has a credential's shape is learnt all the same: its encodings are then known too.
      if (!learnt.has(value)) learnt.set(value, redactor.hold(value));
    },
    forgetLearnt: () => {
      for (const release of learnt.values()) release();
      learnt.clear();
    },
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
          ...(pending.dataClass !== undefined ? { dataClass: pending.dataClass } : {}),
          ...(pending.destination !== undefined ? { destination: shown(pending.destination) } : {}),
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
            dataClass: pending.dataClass ?? null,
            destination: pending.destination === undefined ? null : shown(pending.destination),
            risk: pending.risk,
            goalRevision: pending.goalRevision,
            groupId: pending.groupId ?? null,
            requestedLifetime: pending.requestedLifetime,
            createdAt: pending.createdAt,
            expiresAt: pending.expiresAt,
          }),
      );
    },
    state: (id) => stateOf(approvalById(store, id)),
    // Keyed by run id; a wake without a key (the LISTEN connection came back) may be about any run.
    onChange: (wake) =>
      store.commits.onChange('approvals', (key) => {
        if (key === undefined || key === runId) wake();
      }),
    expire: (id, at) => {
      expireApprovals(store, at);
      return stateOf(approvalById(store, id));
    },
    void: (id, at, why) => {
      voidApprovals(store, { runId, id }, at, why);
      return stateOf(approvalById(store, id));
    },
    tainted: (dataClass, source) => journal.tainted(dataClass, shown(source)),
    decided: (answer) =>
      journal.approvalDecided({
        ...(answer.approvalId !== undefined ? { approvalId: answer.approvalId } : {}),
        effect: answer.action.effect,
        // Clipped: an answer the policy gave at once may be about any request a runner made, of any size.
        target: {
          kind: answer.action.target.kind,
          value: clip(shown(answer.action.target.value), MAX_ASKED_TARGET_CHARS),
        },
        decision: answer.decision,
        by: answer.by,
        reason: clip(shown(answer.reason), 2_000),
        ...(answer.grantId !== undefined ? { grantId: answer.grantId } : {}),
      }),
  };
}

/** What a run's policy is opened from. */
export interface RunPolicyDeps {
  store: Store;
  redactor: Redactor;
  journal: OpenRunJournal;
  plan: RunPlan;
  queued: QueuedRun;
  tenant: string;
  workspaceRoot: string;
}

/**
 * The policy of one run (host/policy/runPolicy.ts), from its plan: the binding's rules, approval policy and
 * timeout, its network allowlist and sandbox. `release()` forgets the secrets the run's reads taught the host.
 */
export function openRunPolicy(deps: RunPolicyDeps): { policy: RunPolicy; release(): void } {
  const { plan, queued, tenant } = deps;
  const { binding } = plan;
  const port = approvalPort({
    store: deps.store,
    redactor: deps.redactor,
    journal: deps.journal,
    tenant,
    bindingId: binding.id,
    sessionId: queued.sessionId,
    runId: queued.runId,
  });
  const policy = new RunPolicy(
    {
      tenant,
      bindingId: binding.id,
      sessionId: queued.sessionId,
      runId: queued.runId,
      goalRevision: queued.goalRevision,
      runnerId: plan.runner.manifest.id,
      sandbox: sandboxBackend(binding.sandbox).strength,
      workspaceRoot: deps.workspaceRoot,
      rules: binding.policy,
      approvalPolicy: binding.approvalPolicy,
      timeoutMs: binding.approvalTimeoutMs,
      networkAllow: binding.network.egress,
    },
    port,
  );
  return { policy, release: () => port.forgetLearnt() };
}
