// What every protocol fuzz case must end with, checked from the outcome, the runner's view and the store.
import { OUTCOME_STATUSES, type RunOutcome } from '../../../host/process/outcome.js';
import type { RunRow } from '../../../host/state/store.js';
import type { FuzzCase } from './cases.js';
import type { PlayLog } from './player.js';

/** What a case left behind, as the campaign observed it. */
export interface CaseObservation {
  outcome: RunOutcome;
  log: PlayLog;
  /** The runner process still exists after the host returned the outcome. */
  runnerAlive: boolean;
}

/** What the full host recorded for the case's run (the end-to-end tier only). */
export interface RecordedRun {
  row: RunRow | undefined;
  /** `run.ended` events of the run in its session's stream. */
  endedEvents: number;
}

/** The case's broken invariants (empty when it ended as the contract says). */
export function checkCase(fuzz: FuzzCase, seen: CaseObservation, recorded?: RecordedRun): string[] {
  const { outcome } = seen;
  const out: string[] = [];
  if (!(OUTCOME_STATUSES as readonly string[]).includes(outcome.status))
    out.push(`outcome status ${JSON.stringify(outcome.status)} is not a run outcome`);
  if (typeof outcome.reason !== 'string' || outcome.reason.trim() === '') out.push('outcome has no reason');
  if (!fuzz.expected.includes(outcome.status))
    out.push(`ended ${outcome.status} (${clip(outcome.reason)}), expected ${fuzz.expected.join(' or ')}`);
  if (outcome.survivors.length > 0) out.push(`processes survived the run: ${outcome.survivors.join(', ')}`);
  if (seen.runnerAlive) out.push(`runner process ${outcome.pid} still alive after the outcome`);
  if (seen.log.badHostLines.length > 0)
    out.push(`host wrote non-JSON to the runner: ${JSON.stringify(seen.log.badHostLines[0])}`);
  if (recorded) out.push(...checkRecorded(outcome, recorded));
  return out;
}

/** The run's end is in the store once, with the outcome's status and a reason; nothing is left running. */
export function checkRecorded(outcome: RunOutcome, recorded: RecordedRun): string[] {
  const { row } = recorded;
  if (!row) return ['the run is not in the store'];
  const out: string[] = [];
  if (row.status !== outcome.status) out.push(`store says ${row.status}, the outcome ${outcome.status}`);
  if (!row.endedAt) out.push('the stored run has no end time');
  if (!row.reason) out.push('the stored run has no reason');
  if (recorded.endedEvents !== 1) out.push(`run.ended recorded ${recorded.endedEvents} times`);
  return out;
}

/** How the case was made, for a violation line: enough to see what the seed does without re-running it. */
export function describeCase(fuzz: FuzzCase): string {
  const notes = [...fuzz.early.map((c) => `early:${c.note}`), ...fuzz.body.map((c) => c.note)];
  return `handshake ${fuzz.handshake}; ${notes.join(', ') || 'no messages'}; ending ${fuzz.ending}`;
}

function clip(text: string): string {
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}
