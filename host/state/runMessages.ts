/**
 * The `run_messages` table (migration 19): a steering `append` message asked of whichever host process runs the run,
 * by a host that received it and does not (docs/approvals.md §7). Each status change is one guarded UPDATE, so of the
 * asker withdrawing and the owner taking, exactly one wins.
 */
import { randomUUID } from 'node:crypto';
import { notifyOthers } from './commitSignal.js';
import { dbOf, type Store } from './store.js';

/** Where an asked message is: waiting for the owner, being handed to its runner, or answered. */
export type RunMessageStatus = 'pending' | 'delivering' | 'accepted' | 'refused' | 'withdrawn';

/** One asked message, as its owner reads it. */
export interface RunMessageAsk {
  id: string;
  runId: string;
  sessionId: string;
  tenant: string;
  /**
   * The chat event as the asker accepted it, redacted as stored events are (JSON) — by the asker's redactor when
   * stored, and by the reader's again when read ({@link pendingAsks}).
   */
  event: string;
}

/** The key two asks of one platform event share (one ask per event, whichever host received it). */
export function deliveryKey(tenant: string, event: { platform: string; bot: string; id: string }): string {
  return JSON.stringify([tenant, event.platform, event.bot, event.id]);
}

/**
 * Ask the owner of `runId` to hand `event` to its runner: the new ask's id, or the id of the ask another host already
 * made with the same event (`existing`). The event is stored as the store stores events, redacted (the runner gets
 * that copy), and only until the ask is answered ({@link moveAsk}). Wakes the owner at commit (PostgreSQL; SQLite's
 * watchers poll).
 */
export function insertAsk(
  store: Store,
  ask: { runId: string; sessionId: string; tenant: string; event: { platform: string; bot: string; id: string } },
  askedBy: string,
): { id: string; existing: boolean } {
  const db = dbOf(store);
  const key = deliveryKey(ask.tenant, ask.event);
  return store.transaction(() => {
    const found = db.prepare('SELECT id FROM run_messages WHERE delivery_key = ?').pluck().get(key) as
      string | undefined;
    if (found !== undefined) return { id: found, existing: true };
    const id = `msg_${randomUUID()}`;
    db.prepare(
      'INSERT INTO run_messages (id, run_id, session_id, tenant, delivery_key, event, status, asked_by, asked_at) ' +
        "VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?)",
    ).run(
      id,
      ask.runId,
      ask.sessionId,
      ask.tenant,
      key,
      JSON.stringify(store.redacted(ask.event)),
      askedBy,
      new Date().toISOString(),
    );
    notifyOthers(db, 'controls');
    return { id, existing: false };
  });
}

/** The status of ask `id` and the owner's reason (a refusal's). */
export function askStatus(store: Store, id: string): { status: RunMessageStatus; reason: string | null } | undefined {
  return dbOf(store).prepare('SELECT status, reason FROM run_messages WHERE id = ?').get(id) as
    { status: RunMessageStatus; reason: string | null } | undefined;
}

/**
 * The asks still pending for any of `runIds` (the runs this process holds), oldest first, each event redacted by this
 * store's redactor too: hosts may run with different secrets, and a secret only the owner knows must not reach its
 * runner (outside attack 5, F3) — the asker could not redact what it did not know.
 */
export function pendingAsks(store: Store, runIds: readonly string[]): RunMessageAsk[] {
  if (runIds.length === 0) return [];
  const rows = dbOf(store)
    .prepare(
      'SELECT id, run_id AS runId, session_id AS sessionId, tenant, event FROM run_messages WHERE status = ' +
        `'pending' AND run_id IN (${runIds.map(() => '?').join(', ')}) ORDER BY asked_at, id`,
    )
    .all(...runIds) as RunMessageAsk[];
  return rows.map((row) => ({ ...row, event: JSON.stringify(store.redacted(JSON.parse(row.event) as unknown)) }));
}

/** The statuses that end an ask: nobody reads its event any more. */
const ANSWERED: readonly RunMessageStatus[] = ['accepted', 'refused', 'withdrawn'];

/**
 * Move ask `id` from `from` to `to` (with the owner's reason); whether this call moved it. Guarded by `from`: the asker
 * withdraws only a pending ask, the owner takes only a pending one and answers only one it took. An answered ask keeps
 * its key and status (a redelivered event is still known) but not its message: the event is blanked to `{}` (the
 * message itself is in the log, `message.received`, when the runner took it). Wakes the other side.
 */
export function moveAsk(
  store: Store,
  id: string,
  from: RunMessageStatus,
  to: RunMessageStatus,
  reason: string | null = null,
): boolean {
  const db = dbOf(store);
  return store.transaction(() => {
    const moved = db
      .prepare(
        'UPDATE run_messages SET status = ?, reason = ?, answered_at = ?, event = coalesce(?, event) ' +
          'WHERE id = ? AND status = ?',
      )
      .run(to, reason, new Date().toISOString(), ANSWERED.includes(to) ? '{}' : null, id, from).changes;
    if (moved > 0) notifyOthers(db, 'controls');
    return moved > 0;
  });
}
