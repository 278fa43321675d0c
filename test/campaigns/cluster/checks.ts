// The cluster campaign's checks on the shared event log, pure over rows read from the database, so a unit test can
// plant each violation in a fabricated log (test/unit/campaigns/clusterChecks.test.ts). Each returns the broken
// invariants as sentences; an empty list means the log holds.
import type { EventRow } from '../fault/invariants.js';

/** What the campaign posted: each event id in the order its conversation's events were posted. */
export type PostedOrder = ReadonlyMap<string, readonly string[]>;

/** A session's events in seq order. */
function bySession(events: readonly EventRow[]): Map<string, EventRow[]> {
  const out = new Map<string, EventRow[]>();
  for (const e of events) out.set(e.session_id, [...(out.get(e.session_id) ?? []), e]);
  for (const list of out.values()) list.sort((a, b) => a.seq - b.seq);
  return out;
}

const chatEventId = (e: EventRow) => (JSON.parse(e.data) as { event?: { id?: string } }).event?.id;

/**
 * Each message's run: the `run.queued` the journal writes right after its `message.received` (the pair is one
 * transaction, so nothing of the session comes between).
 */
export function runOfMessage(events: readonly EventRow[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const list of bySession(events).values())
    list.forEach((e, i) => {
      if (e.type !== 'message.received') return;
      const id = chatEventId(e) ?? '';
      const next = list[i + 1];
      const run = next?.type === 'run.queued' && next.run_id ? [next.run_id] : [];
      out.set(id, [...(out.get(id) ?? []), ...run]);
    });
  return out;
}

/**
 * Every posted event was received once and queued as exactly one run, and no message the campaign did not post is
 * in the log.
 */
export function eachEventOnce(events: readonly EventRow[], posted: PostedOrder): string[] {
  const received = new Map<string, number>();
  for (const e of events)
    if (e.type === 'message.received')
      received.set(chatEventId(e) ?? '', (received.get(chatEventId(e) ?? '') ?? 0) + 1);
  const runs = runOfMessage(events);
  const out: string[] = [];
  const all = [...posted.values()].flat();
  for (const id of all) {
    const n = received.get(id) ?? 0;
    if (n !== 1) out.push(`event ${id} was received ${n} times`);
    else if ((runs.get(id) ?? []).length !== 1) out.push(`event ${id} became ${(runs.get(id) ?? []).length} runs`);
  }
  const known = new Set(all);
  for (const id of received.keys()) if (!known.has(id)) out.push(`event ${id} is in the log but was never posted`);
  return out;
}

/** No run started more than once: an interrupted run is never silently run again. */
export function startedAtMostOnce(events: readonly EventRow[]): string[] {
  const starts = new Map<string, number>();
  for (const e of events)
    if (e.type === 'run.started' && e.run_id) starts.set(e.run_id, (starts.get(e.run_id) ?? 0) + 1);
  return [...starts].filter(([, n]) => n > 1).map(([id, n]) => `run ${id} started ${n} times`);
}

/**
 * Per conversation: its messages are in the log in the order they were posted, its runs start in that order, and
 * no two of its runs are ever active at once (replayed in seq order: a run is active from `run.started` to its end).
 */
export function conversationOrder(events: readonly EventRow[], posted: PostedOrder): string[] {
  const out: string[] = [];
  const postedIndex = new Map<string, number>();
  for (const ids of posted.values()) ids.forEach((id, i) => postedIndex.set(id, i));
  const runs = runOfMessage(events);
  const messageOfRun = new Map<string, string>();
  for (const [id, list] of runs) for (const run of list) messageOfRun.set(run, id);
  for (const [session, list] of bySession(events)) {
    const messages = list.filter((e) => e.type === 'message.received').map((e) => chatEventId(e) ?? '');
    const order = messages.map((id) => postedIndex.get(id) ?? -1);
    if (order.some((n, i) => i > 0 && n <= order[i - 1]!))
      out.push(`session ${session}: messages in the log in the order ${messages.join(', ')}, not as posted`);
    const started = list
      .filter((e) => e.type === 'run.started')
      .map((e) => postedIndex.get(messageOfRun.get(e.run_id ?? '') ?? '') ?? -1);
    if (started.some((n, i) => i > 0 && n <= started[i - 1]!))
      out.push(`session ${session}: runs started out of posted order (${started.join(', ')})`);
    const active = new Set<string>();
    for (const e of list) {
      if (e.type === 'run.started' && e.run_id) {
        active.add(e.run_id);
        if (active.size > 1)
          out.push(`session ${session}: runs ${[...active].join(' and ')} active at once (seq ${e.seq})`);
      } else if ((e.type === 'run.ended' || e.type === 'run.interrupted') && e.run_id) active.delete(e.run_id);
    }
  }
  return out;
}
