import { eventColumns, TERMINAL_RUN_EVENTS, type EventRow, type EventType } from './events.js';
import { dialectOf, type Dialect } from './db.js';
import { larger } from './dialectSql.js';
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

/**
 * A run's events after a seq, in seq order (migration 15, docs/decisions.md SS2): its events other than updates from
 * the partial index `events_by_run_except_updates` (run_id, session_id, seq), merged with its updates from the primary
 * key (session_id, seq) from its `run.started` on — every update of a run comes after its start, and a run that never
 * started has none. Both sides come in seq order, so the compound SELECT merges them and stops at the LIMIT; the
 * updates' range holds the run's own rows and the few the session logged beside them (a message, the next run's
 * `run.queued`). `type <> 'run.update'` is written out where the partial index is meant: SQLite uses a partial index
 * only for a query that names its WHERE terms.
 */
const runEventsSql = (dialect: Dialect) =>
  "SELECT * FROM events WHERE run_id = @run AND session_id = @session AND seq > @after AND type <> 'run.update' " +
  'UNION ALL ' +
  'SELECT * FROM events WHERE session_id = @session AND seq > ' +
  larger(
    dialect,
    '@after',
    "coalesce((SELECT min(seq) FROM events WHERE run_id = @run AND type = 'run.started' AND type <> 'run.update'), " +
      '9223372036854775807)',
  ) +
  " AND run_id = @run AND type = 'run.update' ORDER BY seq LIMIT @limit";

/** SQLite's statement of a run's events after a seq (a test reads its plan). */
export const RUN_EVENTS_SQL = runEventsSql('sqlite');

function statements(store: Store) {
  const db = dbOf(store);
  return {
    session: db.prepare('SELECT * FROM events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?'),
    run: db.prepare(runEventsSql(dialectOf(db))),
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
      : s.run.all({ run: q.runId, session: q.sessionId, after: q.afterSeq, limit: q.limit })
  ) as EventRow[];
  // On a shared store another host wrote some of them, redacted with its secrets only (Store.readRedacted).
  return rows.map((r) => ({
    ...eventColumns(r),
    dataJson: store.shared ? JSON.stringify(store.readRedacted(JSON.parse(r.data) as unknown)) : r.data,
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
