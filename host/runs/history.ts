import type { HistoryMessage } from '../../sdk/protocol/types.js';
import type { Grants } from '../bindings/schema.js';
import type { EventData, StoredEvent } from '../state/events.js';

/** Rough token count of a text (≈ 4 characters a token), the same estimate for every provider. */
export const estimateTokens = (text: string): number => Math.ceil(text.length / 4);

const textOf = (parts: { type: string; text?: string }[]) =>
  parts.map((p) => (p.type === 'text' ? (p.text ?? '') : '')).join('');

/**
 * The history grant of a run (docs/admin-guide.md, `grants.history`): the earlier turns of its
 * own session — each user message and, when its run completed, the runner's final output — never
 * tool calls, partial or failed answers, the run's own message, later messages, or another
 * session. The newest turns are kept: at most `messages`, and whole messages up to `tokens`.
 * Every text passes `redact` (stored events are redacted already; this is the second guard).
 */
export function sessionHistory(
  events: readonly StoredEvent[],
  runId: string,
  grant: Grants['history'],
  redact: (text: string) => string,
): HistoryMessage[] {
  if (grant === 'none') return [];
  const queued = events.find((e) => e.type === 'run.queued' && e.runId === runId);
  if (!queued) return [];
  // This run's own message is the last one received before it was queued (the same transaction).
  const own = events.filter((e) => e.type === 'message.received' && e.seq < queued.seq).at(-1);
  const turns: { seq: number; message: HistoryMessage }[] = [];
  const userSeqOfRun = new Map<string, number>();
  let lastUser: number | undefined;
  for (const e of events) {
    if (e.seq >= queued.seq) break;
    if (e.type === 'message.received' && e !== own) {
      const d = e.data as EventData<'message.received'>;
      turns.push({
        seq: e.seq,
        message: { role: 'user', text: textOf(d.event.message.parts as { type: string; text?: string }[]), at: e.at },
      });
      // A message appended to a running run (steering `append`): that run's answer follows it, not only the first.
      if (e.runId && (e.data as EventData<'message.received'>).appended) userSeqOfRun.set(e.runId, e.seq);
      else lastUser = e.seq;
    } else if (e.type === 'message.received') lastUser = undefined;
    else if (e.type === 'run.queued' && e.runId && lastUser !== undefined) userSeqOfRun.set(e.runId, lastUser);
  }
  // A goal revision is superseded from the first run queued under a newer one (steering): an answer of an older
  // revision that ended after that is late — recorded, never fed to a run of the new goal.
  const revisionOfRun = new Map<string, number>();
  const supersededAt = new Map<number, number>(); // revision → seq of the first run queued under a newer one
  const revisions = new Set<number>();
  for (const e of events) {
    if (e.type !== 'run.queued' || !e.runId) continue;
    const revision = (e.data as EventData<'run.queued'>).goalRevision;
    revisionOfRun.set(e.runId, revision);
    for (const older of revisions) if (older < revision && !supersededAt.has(older)) supersededAt.set(older, e.seq);
    revisions.add(revision);
  }
  const late = (runId: string, endedSeq: number) => {
    const at = supersededAt.get(revisionOfRun.get(runId) ?? 0);
    return at !== undefined && endedSeq > at;
  };
  // An earlier run may end after this one was queued: its answer still follows its question (unless it is late).
  for (const e of events) {
    if (e.type !== 'run.ended' || !e.runId || !userSeqOfRun.has(e.runId) || late(e.runId, e.seq)) continue;
    const d = e.data as EventData<'run.ended'>;
    const text =
      d.status === 'completed' && d.result?.output
        ? textOf(d.result.output.parts as { type: string; text?: string }[])
        : '';
    if (text) turns.push({ seq: userSeqOfRun.get(e.runId)! + 0.5, message: { role: 'assistant', text, at: e.at } });
  }
  turns.sort((a, b) => a.seq - b.seq);
  const window: HistoryMessage[] = [];
  let tokens = 0;
  for (const { message } of turns.reverse()) {
    if (grant.messages !== undefined && window.length >= grant.messages) break;
    const text = redact(message.text);
    if (grant.tokens !== undefined && tokens + estimateTokens(text) > grant.tokens) break;
    tokens += estimateTokens(text);
    window.push({ ...message, text });
  }
  return window.reverse();
}
