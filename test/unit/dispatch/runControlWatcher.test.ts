import { afterEach, describe, expect, it, vi } from 'vitest';
import { RunControlWatcher } from '../../../host/dispatch/runControls.js';
import { tempStore } from '../../helpers/store.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('RunControlWatcher', () => {
  it('stops by itself when the store closes under it, instead of throwing from its timer', () => {
    vi.useFakeTimers();
    const { store } = tempStore();
    const onControl = vi.fn();
    const watcher = new RunControlWatcher(store, onControl);
    watcher.start();
    store.close(); // a host shut down while a run was still watched for cancels
    expect(() => vi.advanceTimersByTime(60_000)).not.toThrow();
    expect(onControl).not.toHaveBeenCalled();
    expect(vi.getTimerCount()).toBe(0);
  });
});
