// The rule evaluator (docs/approvals.md §2, §3, §6): one action and a binding's rules, grants and circumstances in,
// one verdict out. Pure and deterministic: the same inputs always give the same verdict, so `paddock explain` and
// the run compute the same thing.
import type { Action, CapabilityGrant, Decision, DecidedBy, Effect, PolicyRule, Verdict } from './actions.js';
import { isInsidePath, normalizePath, strongest } from './classify.js';
import { domainMatch, domainSpecificity, globMatch, specificity } from './globMatch.js';
import { covers, coversExactly, singleArgv, toolCovers, type CoverageContext } from './grantCoverage.js';
import { riskOf } from './risk.js';

/** What the evaluator needs besides the action. */
export interface EvaluateContext extends CoverageContext {
  rules: PolicyRule[];
  grants: CapabilityGrant[];
  /** `deny` (today's default) turns every remaining ask into a deny. */
  approvalPolicy: 'ask' | 'deny';
  /** The binding's `network.egress` (`host`, `host:port`, `*.example.com`; no port: 80 and 443). */
  networkAllow: string[];
  sandbox: 'strong' | 'weak' | 'none';
  /** The run's taint; tainted when it names at least one data class. */
  taint?: { classes: string[] };
}

/** Effects a rule can never allow: only a grant (an approval's answer) can (the host's floors). */
export const FLOORED_EFFECTS: readonly Effect[] = ['credential', 'destructive', 'publish'];
const FLOORED = new Set<Effect>(FLOORED_EFFECTS);
/** Why a floored effect is asked although a rule or the default allowed it. */
export const floorWhy = (effect: Effect) => `${effect} is never allowed without a grant`;

/**
 * One action a runner might claim per row of the host's defaults (docs/approvals.md §2's table, {@link byDefault}):
 * `paddock explain` classifies each as a run's request is classified and decides it with {@link evaluate}, so the
 * table it prints is what the evaluator does, never a copy of it.
 */
export const DEFAULT_CASES: readonly { case: string; effect: Effect; target: string }[] = [
  { case: 'read in the workspace', effect: 'fs.read', target: 'src/app.ts' },
  { case: 'write in the workspace', effect: 'fs.write', target: 'src/app.ts' },
  { case: 'read outside the workspace', effect: 'fs.read', target: '/etc/hosts' },
  { case: 'write outside the workspace', effect: 'fs.write', target: '/etc/hosts' },
  { case: 'a secret path (credential)', effect: 'fs.read', target: '.env' },
  { case: 'exec of a known read-only command', effect: 'exec', target: 'git status' },
  { case: 'other exec', effect: 'exec', target: 'make build' },
  { case: 'a command that cannot be split', effect: 'exec', target: 'eval "$CMD"' },
  { case: 'network to a destination not in network.egress', effect: 'network', target: 'unlisted.example' },
  { case: 'destructive', effect: 'exec', target: 'rm -rf build' },
  { case: 'publish', effect: 'exec', target: 'git push origin main' },
];
/** Redirect targets that are no file. */
const DEVICES = new Set(['/dev/null', '/dev/stdout', '/dev/stderr', '/dev/tty']);
const STRICTNESS: Record<Decision, number> = { allow: 0, ask: 1, deny: 2 };

/** Is an argument inside the workspace (a flag, a URL, a device, or a relative path that does not climb out)? */
function argInside(arg: string): boolean {
  let value = arg;
  if (arg.startsWith('-')) {
    const eq = arg.indexOf('=');
    // A short option's attached value (`-o/etc/x`, `-t~/bin`) is checked when it looks like a path.
    const attached = arg.startsWith('--') ? '' : arg.slice(2);
    if (eq >= 0) value = arg.slice(eq + 1);
    else if (/[/~]|\.\./.test(attached)) value = attached;
    else return true;
  }
  return value.includes('://') || DEVICES.has(value) || isInsidePath(value);
}

/** Does the action stay inside the workspace: its path, or every argument of every part of its command? */
export function staysInside(action: Action): boolean {
  switch (action.target.kind) {
    case 'path':
      return isInsidePath(action.target.value);
    case 'command': {
      if (action.parts && action.parts.length > 0) return action.parts.every(staysInside);
      const argv = singleArgv(action.target.value);
      return argv !== undefined && argv.slice(1).every(argInside);
    }
    default:
      return true;
  }
}

/**
 * Does a rule's effect name this action? Its own effect, `*`, or the effect as an admin writes it for the target:
 * `exec` names every command whatever the host classified it as (`publish`, `destructive`, a read-only class),
 * `publish` and `destructive` name each other's commands, and
 * `fs.read`/`fs.write` name a path the host classified `credential`. So `deny exec make deploy-docs` denies it although
 * the host calls it publish; what a rule allows is still held by the floors.
 */
function effectMatches(ruleEffect: PolicyRule['effect'], action: Action): boolean {
  if (ruleEffect === '*' || ruleEffect === action.effect) return true;
  // `publish` and `destructive` name each other's commands: a force push is destructive, and `deny publish` must
  // still catch it (both are floored, so an allow written so lifts nothing).
  const pushing = (e: string) => e === 'publish' || e === 'destructive';
  if (action.target.kind === 'command') return ruleEffect === 'exec' || (pushing(ruleEffect) && pushing(action.effect));
  if (action.target.kind === 'path' && action.effect === 'credential')
    return ruleEffect === 'fs.read' || ruleEffect === 'fs.write';
  return false;
}

/**
 * How specifically a rule matches the action, or -1 when it does not: a path glob's literal segments, exact
 * domain over wildcard, exact command over prefix (`git *`), exact tool over `server/*`. A rule naming no match or
 * several matches nothing. Only a deny may match an opaque command; a path deny or ask also matches a command
 * naming such a path.
 */
export function ruleSpecificity(rule: PolicyRule, action: Action, opaque = false): number {
  if (!effectMatches(rule.effect, action)) return -1;
  const keys = (['path', 'domain', 'command', 'tool'] as const).filter((k) => rule.match[k] !== undefined);
  if (keys.length === 1 && keys[0] === 'path' && action.target.kind === 'command' && rule.decision !== 'allow')
    return pathRuleOnCommand(rule.match.path!, action);
  if (keys.length !== 1 || keys[0] !== action.target.kind) return -1;
  const pattern = rule.match[keys[0]]!;
  const value = action.target.value;
  switch (keys[0]) {
    case 'path': {
      const glob = pattern.startsWith('./') ? normalizePath(pattern) : pattern;
      return globMatch(glob, value) ? specificity(glob) : -1;
    }
    case 'domain':
      return domainMatch(pattern, value) ? domainSpecificity(pattern) : -1;
    case 'tool':
      return toolCovers(pattern, value) ? (pattern.endsWith('/*') ? 1 : 2) : -1;
    case 'command': {
      if (opaque && rule.decision !== 'deny') return -1;
      const argv = singleArgv(value);
      const isPrefix = pattern.endsWith(' *');
      const want = singleArgv(isPrefix ? pattern.slice(0, -2) : pattern);
      if (!argv || !want || want.length === 0) return -1;
      if (!want.every((w, i) => argv[i] === w)) return -1;
      if (isPrefix) return argv.length >= want.length ? 100 + want.length : -1;
      return argv.length === want.length ? 1000 + want.length : -1;
    }
  }
}

/**
 * A path deny or ask also holds for a command naming a matching path among its arguments (`cat config/.env`
 * under a deny of every `.env`): stricter only, so an allow of a path never reaches a command.
 */
function pathRuleOnCommand(pattern: string, action: Action): number {
  const glob = pattern.startsWith('./') ? normalizePath(pattern) : pattern;
  const argv = singleArgv(action.target.value);
  if (!argv) return -1;
  const named = argv.slice(1).some((arg) => {
    const value = arg.startsWith('-') && arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : arg;
    return globMatch(glob, normalizePath(value));
  });
  return named ? specificity(glob) : -1;
}

/** The default of an action no rule matches (docs/approvals.md §2's table). */
function byDefault(action: Action, ctx: EvaluateContext): { decision: Decision; why: string } {
  const inside = staysInside(action);
  // The gateway refuses a tool the binding does not grant before the policy sees it: a granted tool is allowed.
  if (action.target.kind === 'tool' && action.effect === 'network')
    return { decision: 'allow', why: 'a tool of an MCP server the binding grants' };
  switch (action.effect) {
    case 'fs.read':
    case 'fs.write': {
      const verb = action.effect === 'fs.read' ? 'read' : 'write';
      if (action.target.kind !== 'path' && action.target.kind !== 'command')
        return { decision: 'ask', why: `${verb} of a ${action.target.kind}` };
      return inside
        ? { decision: 'allow', why: `${verb} in the workspace` }
        : { decision: 'ask', why: `${verb} outside the workspace` };
    }
    case 'exec':
      return { decision: 'ask', why: 'runs a program that is not a known read-only one' };
    case 'network':
      return action.target.kind === 'domain' && ctx.networkAllow.some((p) => domainMatch(p, action.target.value))
        ? { decision: 'allow', why: 'destination in network.egress' }
        : { decision: 'ask', why: 'destination not in network.egress' };
    default:
      return { decision: 'ask', why: `${action.effect} is asked every time` };
  }
}

/** One action's decision (a command's part, or an action that is no command). */
function decide(action: Action, ctx: EvaluateContext, opaque: boolean): { decision: Decision; decidedBy: DecidedBy } {
  const matches = ctx.rules
    .map((rule, index) => ({ rule, index, spec: ruleSpecificity(rule, action, opaque) }))
    .filter((m) => m.spec >= 0);
  const deny = matches.find((m) => m.rule.decision === 'deny');
  if (deny) return { decision: 'deny', decidedBy: { kind: 'rule', rule: deny.rule, index: deny.index } };

  let decision: Decision;
  let decidedBy: DecidedBy;
  const best = matches.reduce<(typeof matches)[number] | undefined>((b, m) => {
    if (!b || m.spec > b.spec) return m;
    return m.spec === b.spec && m.rule.decision === 'ask' && b.rule.decision !== 'ask' ? m : b;
  }, undefined);
  if (best) {
    decision = best.rule.decision;
    decidedBy = { kind: 'rule', rule: best.rule, index: best.index };
  } else {
    const fallback = byDefault(action, ctx);
    decision = fallback.decision;
    decidedBy = { kind: 'default', why: fallback.why };
  }

  if (decision === 'allow' && FLOORED.has(action.effect)) {
    decision = 'ask';
    decidedBy = { kind: 'floor', why: floorWhy(action.effect) };
  }
  if (opaque && (decision === 'allow' || decidedBy.kind === 'default')) {
    decision = 'ask';
    decidedBy = { kind: 'default', why: 'the command could not be split into its parts' };
  }
  const tainted = (ctx.taint?.classes.length ?? 0) > 0;
  const outbound = action.effect === 'network' || action.effect === 'publish' || action.target.kind === 'tool';
  const guarded = tainted && outbound;
  const classes = ctx.taint?.classes.join(', ') ?? '';
  if (guarded && decision === 'allow') {
    decision = 'ask';
    decidedBy = { kind: 'taint', why: `the run is tainted (${classes}): no rule can allow sending data out` };
  }

  if (decision === 'ask' && !opaque) {
    // While tainted only a one-time grant naming exactly this destination counts: a lasting grant was given for
    // data that was not yet at stake (an outside attack let one approval carry every later send).
    const grant = ctx.grants.find((g) =>
      guarded ? g.lifetime === 'once' && coversExactly(g, action, ctx) : covers(g, action, ctx),
    );
    if (grant) return { decision: 'allow', decidedBy: { kind: 'grant', grantId: grant.id } };
    if (guarded && ctx.grants.some((g) => covers(g, action, ctx)))
      decidedBy = {
        kind: 'taint',
        why: `the run is tainted (${classes}): only a one-time approval of exactly ${action.target.value} covers it`,
      };
  }

  if (decision === 'ask' && ctx.approvalPolicy === 'deny') {
    decision = 'deny';
    const why = 'approvalPolicy is deny, so the ask is denied without asking';
    decidedBy = { ...decidedBy, why: joinWhy(decidedBy, why) };
  }
  return { decision, decidedBy };
}

/** A decidedBy's own reason followed by another. */
function joinWhy(by: Exclude<DecidedBy, { kind: 'grant' }>, more: string): string {
  const own = by.kind === 'rule' ? (by.why ?? by.rule.why) : by.why;
  return own ? `${own}; ${more}` : more;
}

/**
 * The verdict on one action. A command with parts is decided part by part and the strictest decision wins
 * (deny > ask > allow; the first part among equals explains it): a command is allowed only if every part is, by
 * a rule, a default or a grant; an allowed command that used grants names them all in its decidedBy. Order
 * within an action: a matching deny rule; the most specific ask/allow rule (ask wins ties); the default; the
 * floors; an opaque command's ask; taint; a covering live grant; `approvalPolicy`.
 */
export function evaluate(action: Action, ctx: EvaluateContext): Verdict {
  const tainted = (ctx.taint?.classes.length ?? 0) > 0;
  const risk = riskOf(action, { sandbox: ctx.sandbox, insideWorkspace: staysInside(action), tainted });
  const opaque = action.opaque === true;
  let pieces = action.target.kind === 'command' && action.parts && action.parts.length > 0 ? action.parts : [action];
  // A command whose effect was raised above all its parts' (a runner claimed more) is judged at that effect.
  const partsMax = strongest(...pieces.map((p) => p.effect));
  if (strongest(partsMax, action.effect) !== partsMax) pieces = pieces.map((p) => ({ ...p, effect: action.effect }));
  let worst: { decision: Decision; decidedBy: DecidedBy } | undefined;
  const used: string[] = [];
  for (const piece of pieces) {
    const d = decide(piece, ctx, opaque);
    if (d.decidedBy.kind === 'grant' && !used.includes(d.decidedBy.grantId)) used.push(d.decidedBy.grantId);
    if (!worst || STRICTNESS[d.decision] > STRICTNESS[worst.decision]) worst = d;
  }
  // An allowed command names every grant its parts used, so the caller can use up each `once` grant among them.
  if (worst!.decision === 'allow' && used.length > 0)
    return {
      decision: 'allow',
      action,
      risk,
      decidedBy: { kind: 'grant', grantId: used[0]!, ...(used.length > 1 ? { grantIds: used } : {}) },
    };
  return { decision: worst!.decision, action, risk, decidedBy: worst!.decidedBy };
}
