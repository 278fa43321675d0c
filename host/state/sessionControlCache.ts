import type { StoredEvent } from './events.js';
import { emptySession, foldEvent, viewSession, type SessionControl, type SessionFold } from './sessionView.js';

/** One cached session: its control fold so far and the highest seq folded into it. */
interface Entry {
  fold: SessionFold;
  lastSeq: number;
}

/** How the cache reads a session's control events (CONTROL_EVENT_TYPES) after a seq, in seq order. */
export type ControlReader = (sessionId: string, afterSeq: number) => StoredEvent[];

/**
 * The control fold of recently started sessions, caught up from the last seq it folded (docs/state.md, "Reads at a
 * run's start"): a run's start reads only the control events committed since the previous start, not ~5 rows per
 * earlier run of its conversation. Exact, because:
 *
 * - a session's seqs are gap-free and given out under the store's one-writer lock, so a committed event with a seq
 *   at or below one already read is never committed later: reading `seq > lastSeq` misses nothing;
 * - only committed rows are folded (the store asks outside transactions only, see `Store.sessionControl`);
 * - what is dropped to keep an entry small is what no control field reads: the per-run folds and the seen ids
 *   (catching up never reads a row twice), and every effect that is closed (resolved, or its latest status
 *   succeeded/failed) and whose run was not interrupted. An event that could make a dropped effect count again —
 *   an effect event other than an intent for an effect the entry does not hold, or any `run.interrupted` (whose
 *   run's closed effects pending recovery lists) — drops the entry, and the session is read whole again.
 */
export class SessionControlCache {
  private readonly entries = new Map<string, Entry>();

  /** @param capacity sessions kept, least recently started dropped first. */
  constructor(
    private readonly read: ControlReader,
    private readonly capacity = 256,
  ) {}

  /** The session's control fields, folded from what was cached plus what was committed since. */
  control(sessionId: string): SessionControl {
    let entry = this.entries.get(sessionId);
    this.entries.delete(sessionId); // re-inserted below: Map order is the LRU order
    if (entry && !caughtUp(entry, this.read(sessionId, entry.lastSeq))) entry = undefined;
    if (!entry) {
      entry = { fold: emptySession(), lastSeq: 0 };
      caughtUp(entry, this.read(sessionId, 0), false);
    }
    compact(entry.fold);
    this.entries.set(sessionId, entry);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value as string);
    const { external, openEffects, paused, pendingRecovery } = viewSession(sessionId, entry.fold);
    return { external, openEffects, paused, pendingRecovery };
  }

  /** How many sessions are held (for tests). */
  get size(): number {
    return this.entries.size;
  }
}

/**
 * Fold `events` (in seq order) into `entry`; false, leaving the entry spoiled, at the first event that could need
 * something {@link compact} dropped (when `check`; a fold of the whole session needs no check).
 */
function caughtUp(entry: Entry, events: StoredEvent[], check = true): boolean {
  for (const e of events) {
    if (check && invalidates(entry.fold, e)) return false;
    foldEvent(entry.fold, e);
    entry.lastSeq = Math.max(entry.lastSeq, e.seq);
  }
  return true;
}

/** Whether `e` could need something {@link compact} dropped from `fold`. */
function invalidates(fold: SessionFold, e: StoredEvent): boolean {
  if (e.type === 'run.interrupted') return true;
  if (!e.type.startsWith('effect.') || e.type === 'effect.intent') return false;
  return !fold.effects.has((e.data as { effectId: string }).effectId);
}

/** Drop what no control field reads (see {@link SessionControlCache}). */
function compact(fold: SessionFold): void {
  fold.runs.clear();
  fold.seen.clear();
  fold.userMessages.clear();
  for (const [effectId, effect] of fold.effects) {
    const status = effect.status?.value;
    const closed = effect.resolved || status === 'succeeded' || status === 'failed';
    if (closed && (effect.runId === null || !fold.interrupted.has(effect.runId))) fold.effects.delete(effectId);
  }
}
