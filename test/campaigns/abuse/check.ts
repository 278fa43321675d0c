// What an abusive run and its neighbour must end with, and the latency figures of the campaign.
import type { RunOutcome } from '../../../host/process/outcome.js';
import type { AbuseKind } from './kinds.js';

/** What the campaign saw of one abusive run. */
export interface AbusiveRun {
  outcome: RunOutcome;
  /** From the host receiving 'abuse started' to the run's end (ms); undefined if it never said so. */
  containmentMs: number | undefined;
  /** Processes carrying the run's marker still alive after the run ended. */
  leftovers: number[];
}

/** The abusive run's broken invariants. */
export function checkAbusive(abuse: AbuseKind, run: AbusiveRun): string[] {
  const out: string[] = [];
  const { outcome } = run;
  if (!abuse.expected.includes(outcome.status))
    out.push(`${abuse.kind} ended ${outcome.status} (${outcome.reason}), expected ${abuse.expected.join(' or ')}`);
  if (abuse.mustHit && !(outcome.limits ?? []).includes(abuse.mustHit))
    out.push(
      `${abuse.kind}: the ${abuse.mustHit} limit did not act (limits: ${(outcome.limits ?? []).join(', ') || 'none'})`,
    );
  if (run.containmentMs === undefined) out.push(`${abuse.kind} never reported that its abuse started`);
  if (outcome.survivors.length) out.push(`${abuse.kind} left survivors: ${outcome.survivors.join(', ')}`);
  if (run.leftovers.length) out.push(`${abuse.kind} left processes alive: ${run.leftovers.join(', ')}`);
  return out;
}

/** The neighbour's broken invariant: every normal run completes, abuse or not. */
export function checkNormal(outcome: RunOutcome, beside: string): string[] {
  return outcome.status === 'completed' ? [] : [`a normal run ${beside} ended ${outcome.status}: ${outcome.reason}`];
}

/** The p-th percentile (nearest rank) of `values`; NaN when empty. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}
