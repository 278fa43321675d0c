import { TERMINAL_RUN_EVENTS, type EventRow, type EventType } from './events.js';
import { perStore } from './perStore.js';
import { dbOf, type Store } from './store.js';

/** A stored event as the SSE stream sends it: its columns, `data` still as the stored JSON text. */
export interface RawEvent {
  id: string;
  sessionId: string;
  seq: number;
  type: EventType;
  runId: string | null;
  at: string;
  /** The event's data as stored: JSON text (the column's CHECK keeps it valid JSON). */
  dataJson: string;
}

/** TERMINAL_RUN_EVENTS as an SQL list of string literals (the names are fixed identifiers: no quote to escape). */
const TERMINAL_TYPES_SQL = TERMINAL_RUN_EVENTS.map((t) => `'${t}'`).join(', ');

function statements(store: Store) {
  const db = dbOf(store);
  return {
    session: db.prepare('SELECT * FROM events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?'),
    // events_by_run holds (run_id, session_id, seq): one index range, already in seq order.
    run: db.prepare('SELECT * FROM events WHERE run_id = ? AND session_id = ? AND seq > ? ORDER BY seq LIMIT ?'),
    // The types as literals, exactly the partial index events_run_end's WHERE (migration 0009): SQLite uses a partial
    // index only for a query whose WHERE names its terms, never a bound parameter. The index holds (run_id, seq).
    terminal: db.prepare(`SELECT min(seq) FROM events WHERE run_id = ? AND type IN (${TERMINAL_TYPES_SQL})`).pluck(),
    lastSeq: db.prepare('SELECT coalesce(max(seq), 0) FROM events WHERE session_id = ?').pluck(),
  };
}

// Prepared once per store: every open stream reads through these on every commit.
const stmts = perStore(statements);

/** Events of a session after `afterSeq` (only those of `runId`, when given), in seq order, at most `limit`. */
export function readEventsAfter(
  store: Store,
  q: { sessionId: string; runId?: string; afterSeq: number; limit: number },
): RawEvent[] {
  const s = stmts(store);
  const rows = (
    q.runId === undefined
      ? s.session.all(q.sessionId, q.afterSeq, q.limit)
      : s.run.all(q.runId, q.sessionId, q.afterSeq, q.limit)
  ) as EventRow[];
  return rows.map((r) => ({
    id: r.id,
    sessionId: r.session_id,
    seq: r.seq,
    type: r.type,
    runId: r.run_id,
    at: r.at,
    dataJson: r.data,
  }));
}

/** The seq of a run's terminal event (`run.ended` / `run.interrupted`), or undefined while it has none. */
export function terminalSeqOfRun(store: Store, runId: string): number | undefined {
  return (stmts(store).terminal.get(runId) as number | null) ?? undefined;
}

/** The highest seq of a session's log (0 when it has none). */
export function lastSeqOfSession(store: Store, sessionId: string): number {
  return stmts(store).lastSeq.get(sessionId) as number;
}
