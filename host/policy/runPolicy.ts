import { randomUUID } from 'node:crypto';
import { RpcError } from '../../sdk/protocol/rpcError.js';
import { clip } from '../util/clip.js';
import type { Action, CapabilityGrant, GrantLifetime, PolicyRule, Risk, Verdict } from './actions.js';
import { waitForDecision } from './approvalWait.js';
import { assignedValues } from './assignedValues.js';
import { classifyPath } from './classify.js';
import { evaluate, staysInside } from './rules.js';

/** The run an approval belongs to, and the binding's policy as the run was planned with it. */
export interface ApprovalRunContext {
  tenant: string;
  bindingId: string;
  sessionId: string;
  runId: string;
  goalRevision: number;
  runnerId: string;
  /** The isolation strength of the run's sandbox backend. */
  sandbox: 'strong' | 'weak';
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
  /** The group of a low-risk ask (one per run), decided together if the approver chooses. */
  groupId?: string;
  /** Set for an outbound action of a tainted run: what it may carry, and where to. */
  dataClass?: string;
  destination?: string;
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
  /** Void it if it is still pending (its request or run is over, or a grant covers it now); its state after. */
  void(id: string, at: string, why: string): ApprovalState | undefined;
  /** Record the answer (`approval.decided`, audited). */
  decided(answer: ApprovalAnswer): void;
  /** Record that the run read a sensitive source (`run.tainted`, audited). */
  tainted(dataClass: string, source: string): void;
  /**
   * Does the text hold a secret value the host knows (every encoding the redactor knows)? `ignoreCase`: letters
   * compared without case (a host name).
   */
  containsSecret(text: string, ignoreCase?: boolean): boolean;
  /**
   * A detector over bytes that pass in chunks (a tunnel's): true once a secret value the host knows is among them,
   * across chunk boundaries; credential shapes do not count (the bytes may be random).
   */
  watchKnown(): (chunk: string) => boolean;
  /** Know this value as a secret for the rest of the run (redacted everywhere, blocked when sent out). */
  learnSecret(value: string): void;
  /**
   * Call `wake` when another process or host may have changed an approval of this run (a decision made there), so a
   * wait reads it at once instead of at its next poll; returns the function that stops it. Without it, the poll.
   */
  onChange?(wake: () => void): () => void;
}

/** Options of the flow (tests shorten the poll; production polls every 200 ms, as run controls are). */
export interface ApprovalFlowOptions {
  pollMs?: number;
  now?: () => Date;
}

/** Who decided, in words, from the verdict's own mechanism (what the runner and the audit record are told). */
export function describeVerdict(verdict: Verdict): { by: string; reason: string } {
  const d = verdict.decidedBy;
  const what =
    `${verdict.action.effect} ${verdict.action.target.kind} ` + JSON.stringify(clip(verdict.action.target.value, 200));
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
      return { by: 'taint', reason: `${what}: ${verdict.decision}, since ${d.why}` };
  }
}

/** Most approvals of one run that wait for a person at once; more are denied without asking. */
export const MAX_WAITING_PER_RUN = 16;
/** Most approvals one run puts before a person in all. */
export const MAX_ASKS_PER_RUN = 256;
/** Longest target put before a person (a command line, a path): longer ones are denied without asking. */
export const MAX_ASKED_TARGET_CHARS = 4_096;

/** What a decided action answers: approved or denied, by whom, why (and the grant that allowed it, if one did). */
export type PolicyAnswer = Omit<ApprovalAnswer, 'approvalId' | 'action'>;

/**
 * One run's policy (docs/approvals.md): every action that reaches the host through the run — `approval/request`,
 * `fs/*`, MCP tool calls through the gateway — is decided here, from the host's own classification of it: the
 * binding's rules, the host's defaults and floors, the run's taint and live capability grants; an `ask` waits for a
 * person (or the binding's timeout, which denies, or the run's end, which voids it) without holding anything but
 * the request. Every answer is recorded (`approval.decided`).
 */
export class RunPolicy {
  private readonly now: () => Date;
  private readonly pollMs: number;
  private readonly taints = new Map<string, string>();
  /** Approvals of this run waiting for a person now, and asked in all. */
  private waiting = 0;
  private asked = 0;

  constructor(
    private readonly ctx: ApprovalRunContext,
    private readonly port: ApprovalPort,
    options: ApprovalFlowOptions = {},
  ) {
    this.now = options.now ?? (() => new Date());
    this.pollMs = options.pollMs ?? 200;
  }

  /** The data classes the run has read so far (empty: not tainted). */
  get taintClasses(): string[] {
    return [...this.taints.keys()];
  }

  /** The run read a sensitive source: recorded once per data class (`run.tainted`), inherited by what it sends. */
  markTainted(dataClass: string, source: string): void {
    if (this.taints.has(dataClass)) return;
    this.taints.set(dataClass, source);
    this.port.tainted(dataClass, source);
  }

  /**
   * Decide one action the host classified; waits for a person when the policy asks. The answer is recorded, except
   * (with `quietDefaults`) an allow by the host's defaults: an `fs/read` or a granted tool call the run makes by the
   * hundred is recorded as its request already.
   */
  async decide(
    action: Action,
    requested: GrantLifetime,
    signal?: AbortSignal,
    quietDefaults = false,
  ): Promise<PolicyAnswer> {
    const verdict = decide(this.ctx, this.port, action, this.now(), this.taintClasses);
    if (verdict.decision !== 'ask') {
      const { by, reason } = describeVerdict(verdict);
      const grantId = verdict.decidedBy.kind === 'grant' ? verdict.decidedBy.grantId : undefined;
      const decision = verdict.decision === 'allow' ? ('approved' as const) : ('denied' as const);
      const answer = { decision, by, reason, ...(grantId ? { grantId } : {}) };
      if (!(quietDefaults && decision === 'approved' && verdict.decidedBy.kind === 'default'))
        this.port.decided({ action, ...answer });
      return answer;
    }
    // One run cannot bury the approvers or the store (an outside attack queued 2 500 asks with 1 MB targets): a
    // bounded number waits at once and in all, and a target too long to read is not put before a person.
    const refusal =
      action.target.value.length > MAX_ASKED_TARGET_CHARS
        ? `its target is ${action.target.value.length} characters, too long to ask a person about`
        : this.waiting >= MAX_WAITING_PER_RUN
          ? `${this.waiting} approvals of this run are already waiting (at most ${MAX_WAITING_PER_RUN})`
          : this.asked >= MAX_ASKS_PER_RUN
            ? `this run has asked ${this.asked} times (at most ${MAX_ASKS_PER_RUN})`
            : undefined;
    if (refusal) {
      const answer = { decision: 'denied' as const, by: 'host', reason: `not asked: ${refusal}` };
      this.port.decided({ action, ...answer });
      return answer;
    }
    this.asked += 1;
    const createdAt = this.now();
    const outbound = action.effect === 'network' || action.effect === 'publish' || action.target.kind === 'tool';
    const pending: PendingApproval = {
      id: `apr_${randomUUID()}`,
      action,
      risk: verdict.risk,
      requestedLifetime: requested,
      goalRevision: this.ctx.goalRevision,
      createdAt: createdAt.toISOString(),
      expiresAt: new Date(createdAt.getTime() + this.ctx.timeoutMs).toISOString(),
      // The low-risk asks of one run are one group, approvable together (docs/approvals.md §4).
      ...(verdict.risk.level === 'low' ? { groupId: `grp_${this.ctx.runId}` } : {}),
      ...(this.taints.size > 0 && outbound
        ? { dataClass: this.taintClasses.join(','), destination: action.target.value }
        : {}),
    };
    this.port.request(pending);
    this.waiting += 1;
    try {
      const final = await waitForDecision(this.port, pending, signal, this.pollMs, this.now, () =>
        this.coveredByLastingGrant(action),
      );
      this.port.decided({ approvalId: pending.id, action, ...final });
      return final;
    } finally {
      this.waiting -= 1;
    }
  }

  /**
   * The answer a lasting grant (run, session, binding) made since the action was asked gives it now, if one covers
   * it. A `once` grant never counts here: it was made for the approval that asked for it, not for its twins.
   */
  private coveredByLastingGrant(action: Action): PolicyAnswer | undefined {
    const at = this.now();
    const lasting = this.port.liveGrants(at).filter((g) => g.lifetime !== 'once');
    if (lasting.length === 0) return undefined;
    const verdict = evaluateFor(this.ctx, action, at, this.taintClasses, lasting);
    if (verdict.decision !== 'allow' || verdict.decidedBy.kind !== 'grant') return undefined;
    const { by, reason } = describeVerdict(verdict);
    return { decision: 'approved', by, reason, grantId: verdict.decidedBy.grantId };
  }

  /**
   * `fs/read` and `fs/write` of a runner, decided before the path policy touches anything; a denial throws
   * `PolicyDenied` naming who denied what. An allowed read of a secret path taints the run, and the `KEY=value`
   * values in it become secrets the host knows (redacted, and blocked if sent out).
   */
  async checkPath(effect: 'fs.read' | 'fs.write', path: string, signal?: AbortSignal): Promise<Action> {
    const method = effect === 'fs.read' ? 'fs/read' : 'fs/write';
    const action = classifyPath(path, effect, method, this.ctx.workspaceRoot);
    // A path outside the workspace never reaches a file: the path policy refuses it, under its own name.
    if (!staysInside(action)) return action;
    const answer = await this.decide(action, 'once', signal, true);
    if (answer.decision !== 'approved')
      throw RpcError.policyDenied(`${method}: ${answer.reason}`, { deniedBy: answer.by, method });
    if (action.effect === 'credential') this.markTainted('credential', action.target.value);
    return action;
  }

  /** What an allowed read returned: content with a secret the host knows taints; a secret path's values are learnt. */
  afterRead(path: string, content: Buffer, wasCredential: boolean): void {
    const text = content.toString('utf8');
    // A secret the host already knew (a configured one), before the file's own values are learnt.
    if (this.port.containsSecret(text)) this.markTainted('secret', path);
    if (wasCredential) for (const value of assignedValues(text)) this.port.learnSecret(value);
  }

  /**
   * An MCP tool call through the gateway (SDK `tool/call` and a harness's MCP endpoint alike): arguments carrying a
   * secret value the host knows are blocked at once; otherwise the call is decided as an action (`network` to the
   * tool), which a tainted run must have approved for exactly this tool. Undefined: it may go.
   */
  async checkTool(
    server: string,
    tool: string,
    args: Record<string, unknown> | undefined,
    signal?: AbortSignal,
  ): Promise<{ deniedBy: string; message: string } | undefined> {
    const action: Action = {
      effect: 'network',
      target: { kind: 'tool', value: `${server}/${tool}` },
      via: 'mcp',
      summary: `call ${tool} of MCP server ${server}`,
    };
    const blocked = this.blockSecret(JSON.stringify(args ?? {}), action, `the arguments of ${server}/${tool}`);
    if (blocked) return blocked;
    const answer = await this.decide(action, 'once', signal, true);
    return answer.decision === 'approved' ? undefined : { deniedBy: answer.by, message: answer.reason };
  }

  /**
   * A destination the run's egress proxy was asked for (`host` or `host:port`), decided as a `network` action before
   * the host resolves the name: the binding's `network.egress` allows it by default, anything else asks (or is
   * denied under `approvalPolicy: deny`), and a tainted run needs a one-time approval of exactly this destination.
   */
  async checkEgress(
    destination: string,
    method: string,
    signal?: AbortSignal,
  ): Promise<{ deniedBy: string; message: string } | undefined> {
    const action: Action = {
      effect: 'network',
      target: { kind: 'domain', value: destination },
      via: 'egress',
      summary: `${method === 'CONNECT' ? 'open a tunnel to' : `${method} to`} ${destination} through the egress proxy`,
    };
    const answer = await this.decide(action, 'once', signal, true);
    return answer.decision === 'approved' ? undefined : { deniedBy: answer.by, message: answer.reason };
  }

  /**
   * Bytes about to leave the host that it can read (a plain-HTTP request through the egress proxy, a tunnel's host
   * name): holding a secret value the host knows, they are blocked at once and the block recorded. Undefined: clean.
   */
  scanOutbound(
    text: string,
    destination: string,
    via: string,
    names: string[] = [],
  ): { deniedBy: string; message: string } | undefined {
    const action: Action = { effect: 'network', target: { kind: 'domain', value: destination }, via };
    return this.blockSecret(text, action, `the bytes the run sends to ${destination}`, names);
  }

  /**
   * A scanner of the bytes a tunnel carries out to `destination`, chunk by chunk (as Latin-1 text, byte for character):
   * a refusal (recorded once) when a secret value the host knows has appeared in them. The bytes of earlier chunks
   * have left by then: this ends a tunnel that carries a secret in clear, it cannot unsend a part of it.
   */
  tunnelScanner(destination: string): (chunk: string) => { deniedBy: string; message: string } | undefined {
    const seen = this.port.watchKnown();
    let refusal: { deniedBy: string; message: string } | undefined;
    return (chunk) => {
      if (refusal || !seen(chunk)) return refusal;
      const action: Action = { effect: 'network', target: { kind: 'domain', value: destination }, via: 'egress' };
      const reason = `the tunnel to ${destination} carries a secret value the host knows: closed`;
      this.port.decided({ action, decision: 'denied', by: 'outbound secret scan', reason });
      refusal = { deniedBy: 'policy.secretScan', message: reason };
      return refusal;
    };
  }

  /**
   * Text about to leave for an action, blocked (and the block recorded) when it holds a secret the host knows; the
   * `names` (host names: a resolver reads them without case) are compared without case.
   */
  private blockSecret(
    text: string,
    action: Action,
    what: string,
    names: string[] = [],
  ): { deniedBy: string; message: string } | undefined {
    const held = this.port.containsSecret(text) || names.some((name) => this.port.containsSecret(name, true));
    if (!held) return undefined;
    const reason = `${what} carry a secret value the host knows: blocked`;
    this.port.decided({ action, decision: 'denied', by: 'outbound secret scan', reason });
    return { deniedBy: 'policy.secretScan', message: reason };
  }
}

/**
 * The policy's verdict, with a `once` grant used up in the same step: when another run used it first, the action is
 * decided again without it (it asks).
 */
function decide(ctx: ApprovalRunContext, port: ApprovalPort, action: Action, at: Date, taint: string[]): Verdict {
  let grants = port.liveGrants(at);
  for (;;) {
    const verdict = evaluateFor(ctx, action, at, taint, grants);
    if (verdict.decidedBy.kind !== 'grant') return verdict;
    const grantId = verdict.decidedBy.grantId;
    const grant = grants.find((g) => g.id === grantId);
    if (grant?.lifetime !== 'once' || port.useOnceGrant(grantId, at.toISOString())) return verdict;
    grants = grants.filter((g) => g.id !== grantId);
  }
}

/** The evaluator's verdict on an action of this run, with these grants. */
function evaluateFor(
  ctx: ApprovalRunContext,
  action: Action,
  at: Date,
  taint: string[],
  grants: CapabilityGrant[],
): Verdict {
  return evaluate(action, {
    ...(taint.length > 0 ? { taint: { classes: taint } } : {}),
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
}
