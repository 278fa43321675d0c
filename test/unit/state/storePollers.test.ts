import { afterEach, describe, expect, it, vi } from 'vitest';
import { RunControlWatcher } from '../../../host/dispatch/runControls.js';
import { ClaimWaker } from '../../../host/state/claims.js';
import type { Store } from '../../../host/state/store.js';
import { tempStore } from '../../helpers/store.js';

afterEach(() => {
  vi.useRealTimers();
});

// Each poller of the store on a timer, as a host starts it: a claim waker (a run waiting for its session) and a
// run-control watcher (cancels written by other processes).
const pollers: [string, (store: Store, onChange: () => void) => { start(): void }][] = [
  ['ClaimWaker', (store, onChange) => new ClaimWaker(store, onChange)],
  ['RunControlWatcher', (store, onChange) => new RunControlWatcher(store, onChange)],
];

describe('store pollers', () => {
  it.each(pollers)(
    '%s stops by itself when the store closes under it, instead of throwing from its timer',
    (_, make) => {
      vi.useFakeTimers();
      const { store } = tempStore();
      const onChange = vi.fn();
      make(store, onChange).start();
      store.close(); // a host shut down while a run still waited or was still watched
      expect(() => vi.advanceTimersByTime(60_000)).not.toThrow();
      expect(onChange).not.toHaveBeenCalled();
      expect(vi.getTimerCount()).toBe(0);
    },
  );
});
