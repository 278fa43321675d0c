/**
 * A cursor over one run's stored events, read from the store in seq order and woken by the store's listener: the
 * events already committed first, then each commit as it comes, until the run's terminal event. The cursor is the
 * last seq read, so a commit racing the first read is neither missed nor read twice.
 */
import type { Store } from '../../state/store.js';
import { TERMINAL_RUN_EVENTS, type StoredEvent } from '../../state/events.js';

/** Events read per store query. */
const BATCH = 500;
/** How often another process's commits are looked for where no notification tells of them (SQLite's `data_version`). */
const POLL_MS = 250;

/**
 * Yield the events of run `runId` in session `sessionId` after seq `afterSeq`, ending after its terminal event, or
 * when `signal` aborts (then without one). What wakes the reader — this process's commits (the store's listener),
 * another host's (its notification, on PostgreSQL) or another process's (a `data_version` poll, on SQLite) — only
 * wakes it: what is yielded always comes from the store. The run may be another host's or process's to run (balancing
 * moved it, a steering message was appended to it): a follower once waited for ever on a moved run's events.
 */
export async function* followRun(
  store: Pick<Store, 'readEvents' | 'subscribe' | 'commits'>,
  run: { sessionId: string; runId: string; afterSeq: number },
  signal: AbortSignal,
): AsyncGenerator<StoredEvent> {
  let cursor = run.afterSeq;
  let dirty = true;
  let wake: (() => void) | undefined;
  const unsubscribe = store.subscribe((event) => {
    if (event.sessionId !== run.sessionId) return;
    dirty = true;
    wake?.();
  });
  // A notification names its session (PostgreSQL); a key-less wake may be any session's.
  const unsignal = store.commits.onChange('events', (sessionId) => {
    if (sessionId !== undefined && sessionId !== run.sessionId) return;
    dirty = true;
    wake?.();
  });
  let version = store.commits.version('events');
  const poll = setInterval(() => {
    let now: number;
    try {
      now = store.commits.version('events');
    } catch {
      return; // the store is closing (a server stop): the follower ends with its request
    }
    if (now === version) return;
    version = now;
    dirty = true;
    wake?.();
  }, POLL_MS);
  poll.unref();
  const onAbort = () => wake?.();
  signal.addEventListener('abort', onAbort);
  try {
    while (!signal.aborted) {
      if (!dirty) {
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
        continue;
      }
      dirty = false; // before the read: a commit during it sets it again
      const batch = store.readEvents(run.sessionId, cursor, BATCH);
      if (batch.length === BATCH) dirty = true; // more to read
      for (const event of batch) {
        cursor = event.seq;
        if (event.runId !== run.runId) continue;
        yield event;
        if (TERMINAL_RUN_EVENTS.includes(event.type)) return;
      }
    }
  } finally {
    unsubscribe();
    unsignal();
    clearInterval(poll);
    signal.removeEventListener('abort', onAbort);
  }
}

/**
 * Call `fn` (a dispatch) while listening to the store, and return its result with the lowest seq committed during
 * it for each run: a run's events start there, so a follower need not read the session's earlier history.
 */
export async function firstSeqsDuring<T>(
  store: Pick<Store, 'subscribe'>,
  fn: () => Promise<T>,
): Promise<{ value: T; firstSeq: Map<string, number> }> {
  const firstSeq = new Map<string, number>();
  const unsubscribe = store.subscribe((event) => {
    if (event.runId && !firstSeq.has(event.runId)) firstSeq.set(event.runId, event.seq);
  });
  try {
    return { value: await fn(), firstSeq };
  } finally {
    unsubscribe();
  }
}
