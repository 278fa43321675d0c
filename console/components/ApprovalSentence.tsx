// An approval as one sentence: "`fs.write` of `src/app.ts` (medium risk: outside a granted folder) asked by
// claude-code, run run_…, 2 min ago". The target, reasons and summary are the runner's: rendered as text.
import type { Approval } from '../lib/approvals.js';
import { href } from '../lib/route.js';
import { Time } from './Time.js';

/** The sentence of `approval`; `runner` is its run's runner when known (else the channel it came through). */
export function ApprovalSentence({ approval: a, runner }: { approval: Approval; runner?: string }) {
  const tone = a.risk.level === 'high' ? 'bad' : a.risk.level === 'medium' ? 'warn' : 'ok';
  return (
    <p class="sentence">
      <code>{a.effect}</code> of <code>{a.target.value}</code> (<span class={`badge ${tone}`}>{a.risk.level} risk</span>
      {a.risk.reasons.length > 0 ? `: ${a.risk.reasons.join('; ')}` : ''}) asked by <strong>{runner ?? a.via}</strong>
      {runner ? ` (through ${a.via})` : ''}, run <a href={href('runs', a.runId)}>{a.runId}</a>,{' '}
      <Time at={a.createdAt} relative />
      {a.dataClass ? ` — may carry ${a.dataClass} data${a.destination ? ` to ${a.destination}` : ''}` : ''}
    </p>
  );
}
