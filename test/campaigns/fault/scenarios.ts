// The runs the fault campaign kills hosts in: the crash-recovery test's scenarios (streaming, a crashing runner,
// runner state requests, confirmed resume pointers), each run by `paddock run` in the data folder's one session.

/** A scenario: the runner, its input, and the exit code of its clean run. */
export interface Scenario {
  name: string;
  runner: string;
  text: string;
  okExit: number;
}

const LONG = Array.from({ length: 30 }, (_, i) => `w${i}`).join(' ');

/** Every scenario; a case picks one at random. */
export const SCENARIOS: readonly Scenario[] = [
  { name: 'echo', runner: 'echo', text: 'alpha beta gamma', okExit: 0 },
  { name: 'long echo', runner: 'echo', text: LONG, okExit: 0 }, // 31 streamed updates
  { name: 'crashing runner', runner: 'test/fixtures/runnerDirs/crashes', text: 'alpha', okExit: 4 },
  { name: 'state requests', runner: 'test/fixtures/runnerDirs/increments-state-counter', text: 'alpha', okExit: 0 },
  { name: 'pointers', runner: 'test/fixtures/runnerDirs/echoes-resume-pointers', text: 'resume-me', okExit: 0 },
];

/** The CLI arguments of a scenario's run. */
export const runArgs = (s: Scenario) => ['run', '--runner', s.runner, '--text', s.text];

/** Where a kill landed, from the last event the killed host committed (none: before its first commit). */
export function phaseOf(lastType: string | undefined): string {
  if (lastType === undefined) return 'start-up (nothing committed yet)';
  if (['run.interrupted', 'effect.reconciled'].includes(lastType)) return 'recovery';
  if (['session.created', 'message.received', 'run.queued', 'run.started'].includes(lastType)) return 'dispatch';
  if (lastType === 'run.update') return 'streaming';
  if (lastType === 'run.request') return 'host request';
  if (lastType.startsWith('effect.')) return 'effect';
  return 'run end';
}
