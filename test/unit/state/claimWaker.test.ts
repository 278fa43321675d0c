import { afterEach, describe, expect, it, vi } from 'vitest';
import { ClaimWaker } from '../../../host/state/claims.js';
import { tempStore } from '../../helpers/store.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('ClaimWaker', () => {
  it('stops by itself when the store closes under it, instead of throwing from its timer', () => {
    vi.useFakeTimers();
    const { store } = tempStore();
    const onChange = vi.fn();
    const waker = new ClaimWaker(store, onChange);
    waker.start();
    store.close(); // a host shut down while a run still waited for a claim
    expect(() => vi.advanceTimersByTime(60_000)).not.toThrow();
    expect(onChange).not.toHaveBeenCalled();
    expect(vi.getTimerCount()).toBe(0);
  });
});
