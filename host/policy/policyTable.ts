// A binding's approval policy as `paddock explain` prints it (docs/approvals.md §2): its rules in order, the host's
// defaults and floors — every decision computed by the run's own classifier and evaluator (rules.ts), none restated.
import type { Decision, Effect, PolicyRule } from './actions.js';
import { describeVerdict } from './runPolicy.js';
import { classifyRequest } from './classify.js';
import { DEFAULT_CASES, evaluate, FLOORED_EFFECTS, type EvaluateContext } from './rules.js';

/** The workspace root the sample actions are classified against (any absolute path does). */
const SAMPLE_ROOT = '/workspace';

/** What of a binding the table needs. */
export interface PolicyOfBinding {
  id: string;
  policy: PolicyRule[];
  approvalPolicy: 'ask' | 'deny';
  approvalTimeoutMs: number;
  /** The binding's `network.egress` list. */
  networkAllow: string[];
  sandbox: 'strong' | 'weak' | 'none';
}

/** One row of the defaults table: a sample action, the host's default for it, and what this binding decides. */
export interface DefaultRow {
  case: string;
  /** The action as the host classified it (a runner's claim is raised, never lowered). */
  effect: Effect;
  target: { kind: string; value: string };
  /** With no rule and approvalPolicy `ask`: the host's default, floors included. */
  byDefault: { decision: Decision; by: string; why: string };
  /** With this binding's rules and approvalPolicy. */
  here: { decision: Decision; by: string; why: string };
}

/** A binding's approval policy, as explain shows it. */
export interface PolicyTable {
  approvalPolicy: 'ask' | 'deny';
  approvalTimeoutMs: number;
  /** The binding's rules in order (numbered as `binding rule N` in decisions), each with what holds it back. */
  rules: { n: number; effect: PolicyRule['effect']; match: string; decision: Decision; why?: string; note?: string }[];
  defaults: DefaultRow[];
  floors: string[];
}

/** A rule's match as written (`command: npm test`). */
function matchText(rule: PolicyRule): string {
  return Object.entries(rule.match)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}: ${v}`)
    .join(', ');
}

/** The evaluator's context for a sample action of `b` (no grants, no taint). */
function contextOf(b: PolicyOfBinding, rules: PolicyRule[], approvalPolicy: 'ask' | 'deny'): EvaluateContext {
  return {
    rules,
    grants: [],
    approvalPolicy,
    networkAllow: b.networkAllow,
    sandbox: b.sandbox,
    now: new Date(0),
    tenant: 'explain',
    bindingId: b.id,
    sessionId: 'explain',
    runId: 'explain',
  };
}

/** The sample actions of the defaults table: {@link DEFAULT_CASES}, and a destination in network.egress if any. */
export function sampleCases(
  b: Pick<PolicyOfBinding, 'networkAllow'>,
): { case: string; effect: Effect; target: string }[] {
  const allowed = b.networkAllow[0];
  return [
    ...DEFAULT_CASES,
    ...(allowed
      ? [
          {
            case: 'network to a destination in network.egress',
            effect: 'network' as const,
            target: allowed.replace(/^\*\./, 'a.'),
          },
        ]
      : []),
  ];
}

/** How one sample is decided in `ctx`: its decision, the mechanism (`binding rule 2`, `host default`…) and why. */
function decided(action: ReturnType<typeof classifyRequest>, ctx: EvaluateContext) {
  const verdict = evaluate(action, ctx);
  const d = verdict.decidedBy;
  const why = d.kind === 'grant' ? d.grantId : d.kind === 'rule' ? (d.why ?? d.rule.why ?? '') : d.why;
  return { decision: verdict.decision, by: describeVerdict(verdict).by, why };
}

/** Classify a sample as a run's `approval/request` is classified. */
export function sampleAction(sample: { effect: Effect; target: string }) {
  return classifyRequest({ effect: sample.effect, target: sample.target }, 'explain', { workspaceRoot: SAMPLE_ROOT });
}

/** The approval policy table of a binding, decided by the evaluator a run uses. */
export function policyTable(b: PolicyOfBinding): PolicyTable {
  const defaults = sampleCases(b).map((sample) => {
    const action = sampleAction(sample);
    return {
      case: sample.case,
      effect: action.effect,
      target: action.target,
      byDefault: decided(action, contextOf(b, [], 'ask')),
      here: decided(action, contextOf(b, b.policy, b.approvalPolicy)),
    };
  });
  const floored = new Set<string>(FLOORED_EFFECTS);
  const rules = b.policy.map((rule, i) => {
    const notes: string[] = [];
    if (rule.decision === 'allow' && (rule.effect === '*' || floored.has(rule.effect)))
      notes.push(`an allow of ${FLOORED_EFFECTS.join(', ')} is held at ask by the floors`);
    if (rule.decision === 'ask' && b.approvalPolicy === 'deny')
      notes.push('approvalPolicy deny turns this ask into deny');
    return {
      n: i + 1,
      effect: rule.effect,
      match: matchText(rule),
      decision: rule.decision,
      ...(rule.why !== undefined ? { why: rule.why } : {}),
      ...(notes.length > 0 ? { note: notes.join('; ') } : {}),
    };
  });
  return {
    approvalPolicy: b.approvalPolicy,
    approvalTimeoutMs: b.approvalTimeoutMs,
    rules,
    defaults,
    floors: [
      `${FLOORED_EFFECTS.join(', ')}: never allowed by a rule or a default, only by a grant (an approval's answer)`,
      'a command that cannot be split into its parts: asked; only a deny rule matches it, no grant covers it',
      'a tainted run sending data out (network, publish, MCP tools): asked; only a grant naming exactly the ' +
        'destination covers it',
      b.approvalPolicy === 'deny'
        ? 'approvalPolicy deny: every ask is denied without asking anybody'
        : `approvalPolicy ask: asks wait for a person, denied after ${b.approvalTimeoutMs} ms`,
    ],
  };
}
