import type { Store } from '../../state/store.js';
import { dataVersion } from '../../state/runControls.js';
import { lastSeqOfSession } from '../../state/streamReads.js';

/** Default interval of the cross-process poll (docs/http-api.md: 100 ms while a stream is open). */
export const DEFAULT_POLL_MS = 100;

interface Watched {
  wakes: Set<() => void>;
  /** The highest seq of the session this watcher has told its listeners about. */
  known: number;
}

/**
 * Tells the streams of a session that something was committed to it, by this process (the store's
 * committed events) or by another process on the same data folder (SQLite has no cross-process
 * notification: a poll of `data_version`, one pragma per tick, then one `max(seq)` per watched
 * session only when it changed). One watcher per server, shared by every stream: one store listener
 * and one timer, both held only while at least one stream is open. A wake is a hint: the stream's
 * cursor decides what is sent, so a spurious or coalesced wake never loses or repeats an event.
 */
export class CommitWatcher {
  private readonly sessions = new Map<string, Watched>();
  private unsubscribe: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private version = 0;

  constructor(
    private readonly store: Store,
    private readonly pollMs = DEFAULT_POLL_MS,
  ) {}

  /** Call `wake` after every commit to `sessionId` from now on. Returns the function that stops it. */
  watch(sessionId: string, wake: () => void): () => void {
    let watched = this.sessions.get(sessionId);
    if (!watched) {
      // Read before anything is held: when the store fails here, nothing is left to release.
      watched = { wakes: new Set(), known: lastSeqOfSession(this.store, sessionId) };
      if (this.sessions.size === 0) this.start();
      this.sessions.set(sessionId, watched);
    }
    // A Set of functions: each call gets its own entry (a new closure) even for the same stream.
    const entry = () => wake();
    watched.wakes.add(entry);
    return () => {
      const w = this.sessions.get(sessionId);
      if (!w?.wakes.delete(entry)) return;
      if (w.wakes.size === 0) this.sessions.delete(sessionId);
      if (this.sessions.size === 0) this.stop();
    };
  }

  /** Sessions watched now, and whether the store listener and the poll timer are held (for tests and metrics). */
  stats(): { sessions: number; wakes: number; listening: boolean; polling: boolean } {
    let wakes = 0;
    for (const w of this.sessions.values()) wakes += w.wakes.size;
    return { sessions: this.sessions.size, wakes, listening: !!this.unsubscribe, polling: !!this.timer };
  }

  private start(): void {
    this.version = dataVersion(this.store);
    this.unsubscribe = this.store.subscribe((event) => {
      const w = this.sessions.get(event.sessionId);
      if (!w) return;
      w.known = Math.max(w.known, event.seq);
      this.wakeAll(w);
    });
    this.timer = setInterval(() => this.poll(), this.pollMs);
    // The server's listener keeps the process alive, never this timer.
    this.timer.unref();
  }

  private stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  private poll(): void {
    const changed: Watched[] = [];
    try {
      const version = dataVersion(this.store);
      if (version === this.version) return;
      this.version = version;
      for (const [sessionId, w] of this.sessions) {
        const last = lastSeqOfSession(this.store, sessionId);
        if (last <= w.known) continue;
        w.known = last;
        changed.push(w);
      }
    } catch {
      return; // the store is closing (server stop): the streams end with it
    }
    for (const w of changed) this.wakeAll(w);
  }

  private wakeAll(w: Watched): void {
    // Copied: a wake may end its stream, which unwatches (and edits the set) at once.
    for (const wake of [...w.wakes]) wake();
  }
}
