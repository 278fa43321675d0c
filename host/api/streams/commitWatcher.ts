import type { Store } from '../../state/store.js';
import { lastSeqOfSession } from '../../state/streamReads.js';

/** Default interval of the cross-process poll (docs/http-api.md: 100 ms while a stream is open). */
export const DEFAULT_POLL_MS = 100;

interface Watched {
  wakes: Set<() => void>;
  /** The highest seq of the session this watcher has told its listeners about. */
  known: number;
}

/**
 * Tells the streams of a session that something was committed to it, by this process (the store's committed events)
 * or by another process or host (the store's "commits by others" signal, topic `events`: on SQLite a poll of
 * `data_version`, one pragma per tick, then one `max(seq)` per watched session only when it changed; on PostgreSQL a
 * notification naming the session wakes its streams at once, and the tick reads only memory). One watcher per server,
 * shared by every stream: one store listener, one signal subscription and one timer, held only while at least one
 * stream is open. A wake is a hint: the stream's cursor decides what is sent, so a spurious or coalesced wake never
 * loses or repeats an event.
 */
export class CommitWatcher {
  private readonly sessions = new Map<string, Watched>();
  private unsubscribe: (() => void) | undefined;
  private unsignal: (() => void) | undefined;
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
    this.version = this.store.commits.version('events');
    this.unsubscribe = this.store.subscribe((event) => {
      const w = this.sessions.get(event.sessionId);
      if (!w) return;
      w.known = Math.max(w.known, event.seq);
      this.wakeAll(w);
    });
    this.unsignal = this.store.commits.onChange('events', (sessionId) => {
      // Heard without a poll: the tick has nothing left to find for this version.
      this.version = this.store.commits.version('events');
      this.check(sessionId);
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
    this.unsignal?.();
    this.unsignal = undefined;
  }

  private poll(): void {
    try {
      const version = this.store.commits.version('events');
      if (version === this.version) return;
      this.version = version;
    } catch {
      return; // the store is closing (server stop): the streams end with it
    }
    this.check();
  }

  /** Wake the streams of `only` (of every watched session without it) whose session has seqs they were not told of. */
  private check(only?: string): void {
    const changed: Watched[] = [];
    try {
      for (const [sessionId, w] of this.sessions) {
        if (only !== undefined && sessionId !== only) continue;
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
