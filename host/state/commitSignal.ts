/**
 * "Commits by others": how the store's watchers (claims, run controls, approvals, SSE streams) learn that another
 * connection — another process on the data folder, another host on the PostgreSQL database — committed something they
 * watch (docs/scale-out.md §4, decision PG6). A signal only wakes: the watcher then reads the store, which is the
 * truth, so a spurious or coalesced wake never loses or repeats anything.
 *
 * SQLite has no cross-process notification: its signal is `PRAGMA data_version` (it changes only when another
 * connection commits), polled by the watchers. PostgreSQL's is LISTEN/NOTIFY: a writer `pg_notify`s in its
 * transaction (delivered at COMMIT, dropped on ROLLBACK, {@link notifyOthers}), and one LISTEN connection per store
 * counts the notifications and wakes the watchers at once (pg/pgCommitSignal.ts).
 */
import { dialectOf, type Db } from './db.js';

/** What a commit touched, as far as a watcher cares. */
export type CommitTopic = 'events' | 'claims' | 'controls' | 'approvals';

/** The notification channel of each topic (PostgreSQL identifiers: fixed, lower case). */
export const COMMIT_CHANNELS: Record<CommitTopic, string> = {
  events: 'paddock_events',
  claims: 'paddock_claims',
  controls: 'paddock_controls',
  approvals: 'paddock_approvals',
};

/** Told of another connection's commit: `key` is what it was about (an event's session id), when the signal knows. */
export type CommitWake = (key?: string) => void;

/** The signal a store gives its watchers ({@link Store.commits}); nothing above host/state/ knows its dialect. */
export interface CommitSignal {
  /**
   * A number that changes after another connection committed to `topic` (possibly also without one: a spurious change
   * costs the watcher a read). SQLite: `data_version`, whatever the topic; PostgreSQL: a count of the topic's
   * notifications and of LISTEN (re)connections, read from memory.
   */
  version(topic: CommitTopic): number;
  /**
   * Call `wake` from the event loop (never inside a transaction) when another connection's commit to `topic` is known
   * without a poll: a PostgreSQL notification (with its key), or a LISTEN (re)connection (without one: whatever was
   * committed meanwhile was not heard, so every watcher re-reads). SQLite's signal never calls it; its watchers find
   * changes by polling {@link version}. Returns the function that stops it.
   */
  onChange(topic: CommitTopic, wake: CommitWake): () => void;
  /** Release what the signal holds (the LISTEN connection). */
  close(): void;
}

/** SQLite's signal: `data_version` of the store's own connection (it moves only for other connections' commits). */
export function sqliteCommitSignal(db: Db): CommitSignal {
  return {
    version: () => db.pragma('data_version', { simple: true }) as number,
    onChange: () => () => undefined,
    close: () => undefined,
  };
}

/**
 * Tell other connections' watchers, at COMMIT, that this transaction wrote to `topic` (about `key`: a session id for
 * events). Call inside the writing transaction. A no-op on SQLite, whose watchers poll `data_version`; on PostgreSQL
 * one `pg_notify` (identical ones of one transaction are delivered once).
 */
export function notifyOthers(db: Db, topic: CommitTopic, key = ''): void {
  if (dialectOf(db) !== 'postgres') return;
  db.prepare('SELECT pg_notify(?, ?)').run(COMMIT_CHANNELS[topic], key);
}
