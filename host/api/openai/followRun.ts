/**
 * A cursor over one run's stored events, read from the store in seq order and woken by the store's listener: the
 * events already committed first, then each commit as it comes, until the run's terminal event. The cursor is the
 * last seq read, so a commit racing the first read is neither missed nor read twice.
 */
import type { Store } from '../../state/store.js';
import { TERMINAL_RUN_EVENTS, type StoredEvent } from '../../state/events.js';

/** Events read per store query. */
const BATCH = 500;

/**
 * Yield the events of run `runId` in session `sessionId` after seq `afterSeq`, ending after its terminal event, or
 * when `signal` aborts (then without one). The store's listener only wakes the reader: what is yielded always comes
 * from the store.
 */
export async function* followRun(
  store: Pick<Store, 'readEvents' | 'subscribe'>,
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
