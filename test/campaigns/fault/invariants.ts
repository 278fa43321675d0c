// The fault campaign's checks on a data folder's committed state, pure over rows read from the database, so a unit
// test can plant a violation in a fabricated log (test/unit/campaigns/invariants.test.ts). Each returns the broken
// invariants as sentences; an empty list means the state holds.

/** An `events` row. */
export interface EventRow {
  session_id: string;
  seq: number;
  type: string;
  run_id: string | null;
  data: string;
}

/** A `runs` row. */
export interface RunRow {
  id: string;
  status: string;
  pid: number | null;
  pid_start: number | null;
}

/** One update line the host streamed to its client (`paddock run --json`: `{"type":"update","seq":…}`). */
export interface StreamedUpdate {
  runId: string;
  runnerSeq: number;
  update: unknown;
}

const parse = (e: EventRow) => JSON.parse(e.data) as Record<string, unknown>;

/** Every session's seq is 1, 2, 3 … with no gap and no duplicate. */
export function gapFreeSeq(events: readonly EventRow[]): string[] {
  const next = new Map<string, number>();
  const out: string[] = [];
  for (const e of [...events].sort((a, b) => a.session_id.localeCompare(b.session_id) || a.seq - b.seq)) {
    const want = (next.get(e.session_id) ?? 0) + 1;
    if (e.seq !== want) out.push(`session ${e.session_id}: seq ${e.seq} where ${want} was due`);
    next.set(e.session_id, e.seq);
  }
  return out;
}

/** No run is left `queued` or `running` (checked once a host has recovered and finished). */
export function noneRunning(runs: readonly RunRow[]): string[] {
  return runs.filter((r) => r.status === 'queued' || r.status === 'running').map((r) => `run ${r.id} is ${r.status}`);
}

/** Every run has exactly one end (`run.ended` or `run.interrupted`), and its status agrees with it. */
export function endedExactlyOnce(runs: readonly RunRow[], events: readonly EventRow[]): string[] {
  const ends = new Map<string, EventRow[]>();
  for (const e of events)
    if ((e.type === 'run.ended' || e.type === 'run.interrupted') && e.run_id)
      ends.set(e.run_id, [...(ends.get(e.run_id) ?? []), e]);
  const out: string[] = [];
  for (const r of runs) {
    const mine = ends.get(r.id) ?? [];
    if (mine.length !== 1) out.push(`run ${r.id} ended ${mine.length} times (${mine.map((e) => e.type).join(', ')})`);
    else if ((mine[0]!.type === 'run.interrupted') !== (r.status === 'interrupted'))
      out.push(`run ${r.id} is ${r.status} but its end is ${mine[0]!.type}`);
  }
  for (const id of ends.keys()) if (!runs.some((r) => r.id === id)) out.push(`run ${id} ended but has no runs row`);
  return out;
}

/** One intent per (run, effect kind), and — once recovered — exactly one decision (result or reconciliation) each. */
export function effectsOnce(events: readonly EventRow[], recovered: boolean): string[] {
  const out: string[] = [];
  const intents = events.filter((e) => e.type === 'effect.intent');
  const keys = new Set<string>();
  for (const i of intents) {
    const key = `${i.run_id}:${parse(i).kind as string}`;
    if (keys.has(key)) out.push(`effect ${key} intended twice`);
    keys.add(key);
  }
  const decisions = new Map<string, number>();
  for (const e of events)
    if (e.type === 'effect.result' || e.type === 'effect.reconciled') {
      const id = parse(e).effectId as string;
      decisions.set(id, (decisions.get(id) ?? 0) + 1);
    }
  for (const i of intents) {
    const id = parse(i).effectId as string;
    const n = decisions.get(id) ?? 0;
    if (n > 1 || (recovered && n !== 1)) out.push(`effect ${id} (${parse(i).kind as string}) decided ${n} times`);
  }
  return out;
}

/** Every update the client was streamed is stored, as streamed (same run, runner seq and content), counted. */
export function streamedAreStored(streamed: readonly StreamedUpdate[], events: readonly EventRow[]): string[] {
  const stored = new Map<string, number>();
  const key = (runId: string, runnerSeq: unknown, update: unknown) =>
    `${runId}\u0000${String(runnerSeq)}\u0000${JSON.stringify(update)}`;
  for (const e of events)
    if (e.type === 'run.update' && e.run_id) {
      const d = parse(e);
      const k = key(e.run_id, d.runnerSeq, d.update);
      stored.set(k, (stored.get(k) ?? 0) + 1);
    }
  const out: string[] = [];
  for (const s of streamed) {
    const k = key(s.runId, s.runnerSeq, s.update);
    const left = stored.get(k) ?? 0;
    if (left === 0) out.push(`update ${s.runnerSeq} of run ${s.runId} was streamed but is not stored`);
    else stored.set(k, left - 1);
  }
  return out;
}

/**
 * A run interrupted by a host stop is reported to at most one later run (`recoveryDelivered` of a run.started), and
 * once a later run has started in its session (`recovered`), to exactly one.
 */
export function interruptionToldOnce(
  runs: readonly RunRow[],
  events: readonly EventRow[],
  recovered: boolean,
): string[] {
  const told = new Map<string, number>();
  for (const e of events)
    if (e.type === 'run.started')
      for (const id of (parse(e).recoveryDelivered as string[] | undefined) ?? [])
        told.set(id, (told.get(id) ?? 0) + 1);
  return runs
    .filter((r) => r.status === 'interrupted' && ((told.get(r.id) ?? 0) > 1 || (recovered && !told.has(r.id))))
    .map((r) => `interrupted run ${r.id} was reported ${told.get(r.id) ?? 0} times`);
}

/** The update lines of `paddock run --json` output (the run id from its `started` line). */
export function streamedUpdates(stdout: string): StreamedUpdate[] {
  let runId = '';
  const out: StreamedUpdate[] = [];
  for (const line of stdout.split('\n')) {
    if (!line.startsWith('{')) continue;
    let msg: { type?: string; runId?: string; seq?: number; update?: unknown };
    try {
      msg = JSON.parse(line) as typeof msg;
    } catch {
      continue; // the last line of a killed host may be cut short: it was not fully seen by the client
    }
    if (msg.type === 'started' && msg.runId) runId = msg.runId;
    else if (msg.type === 'update') out.push({ runId, runnerSeq: msg.seq!, update: msg.update });
  }
  return out;
}
