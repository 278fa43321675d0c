// How risky an action is, for approvers and for grouping asks (docs/approvals.md §4): a score from effect, scope,
// reversibility, sensitivity, destination and the run's sandbox, and the reasons in words.
import type { Action, Effect, Risk } from './actions.js';

/** The run's circumstances that change an action's risk. */
export interface RiskContext {
  /** The run's isolation (its backend's strength, host/sandbox/backend.ts): `none` when it has no sandbox at all. */
  sandbox: 'strong' | 'weak' | 'none';
  /** The action's paths (or a command's arguments) stay inside the workspace. */
  insideWorkspace: boolean;
  /** The run has read a sensitive source (docs/approvals.md §6). */
  tainted: boolean;
}

/** Each effect's base score and its reason. */
const BASE: Record<Effect, [number, string]> = {
  'fs.read': [5, 'reads files'],
  'fs.write': [15, 'writes files'],
  exec: [30, 'runs a program'],
  network: [35, 'reaches the network'],
  credential: [55, 'secret path'],
  destructive: [60, 'destroys data'],
  publish: [60, 'publishes outside the machine'],
};

/** The level of a score: low below 30, medium below 70, high from 70. */
export function levelOf(score: number): Risk['level'] {
  return score < 30 ? 'low' : score < 70 ? 'medium' : 'high';
}

/** The risk of one action (a command's is its riskiest part's, with every part's reasons). */
export function riskOf(action: Action, ctx: RiskContext): Risk {
  const reasons: string[] = [];
  let score = 0;
  const add = (points: number, why: string) => {
    score += points;
    if (!reasons.includes(why)) reasons.push(why);
  };
  const effects = new Set<Effect>([action.effect, ...(action.parts ?? []).map((p) => p.effect)]);
  let base = 0;
  for (const e of effects) {
    const [points, why] = BASE[e];
    base = Math.max(base, points);
    if (e !== 'fs.read' || effects.size === 1) reasons.push(why);
  }
  score = base;
  if (action.effect === 'destructive' || action.effect === 'publish') add(10, 'cannot be undone');
  if (action.target.kind === 'domain' || action.target.kind === 'tool' || action.effect === 'network')
    add(5, `sends to ${action.target.kind === 'tool' ? 'a tool' : 'a destination'} outside the host`);
  if (!ctx.insideWorkspace && (action.target.kind === 'path' || action.target.kind === 'command'))
    add(15, 'outside the workspace');
  if (ctx.sandbox === 'none') add(20, 'no sandbox');
  else if (ctx.sandbox === 'weak') add(10, 'a weak sandbox only (no namespaces)');
  const outbound = action.effect === 'network' || action.effect === 'publish' || action.target.kind === 'tool';
  if (ctx.tainted && outbound) add(25, 'the run is tainted and this sends data out');
  if (action.opaque) {
    // A command the host could not take apart may do anything its text hides.
    score = Math.max(score, 70);
    reasons.push('command could not be split into its parts');
  }
  score = Math.min(100, Math.max(0, Math.round(score)));
  return { score, level: levelOf(score), reasons };
}
