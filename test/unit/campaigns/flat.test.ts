import { describe, expect, it } from 'vitest';
import { flatness, median } from '../../campaigns/soak/flat.js';

// The soak's flatness rules on fabricated series: noise passes, a planted leak is reported.

const TREND = { kind: 'trend', relative: 0.1, absolute: 10 } as const;
const EXACT = { kind: 'exact' } as const;
const noisy = (n: number, base: number, slope = 0) =>
  Array.from({ length: n }, (_, i) => base + slope * i + ((i * 7919) % 13) - 6);

describe('soak flatness', () => {
  it('takes medians', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
  });

  it('passes noise around a level, and reports a steady growth past the tolerance', () => {
    expect(flatness('rss', noisy(50, 1000), 1000, 1000, TREND)).toBeUndefined();
    // 3 per sample over 50 samples: ~+120 between the second and last tenths, past 10 % + 10 of ~1020.
    expect(flatness('rss', noisy(50, 1000, 3), 1000, 1150, TREND)).toMatch(/^rss grew: last-tenth median/);
  });

  it('does not count the warm-up tenth against the trend', () => {
    const warm = [5000, ...noisy(49, 1000)];
    expect(flatness('heap', warm, 1000, 1000, TREND)).toBeUndefined();
  });

  it('wants exact series back at the baseline, and no late peak above the early ones', () => {
    const fds = Array.from({ length: 20 }, () => 27);
    expect(flatness('fds', fds, 27, 27, EXACT)).toBeUndefined();
    expect(flatness('fds', fds, 27, 28, EXACT)).toBe('fds: 28 after the runs, 27 at the baseline');
    const leakFreedAtEnd = [...fds.slice(0, 10), 27, 28, 29, 30, 31, 32, 33, 34, 35, 36];
    expect(flatness('fds', leakFreedAtEnd, 27, 27, EXACT)).toBe('fds: up to 36 in the second half, 27 in the first');
  });

  it('refuses to judge fewer than ten samples', () => {
    expect(flatness('fds', [1, 1, 1], 1, 1, EXACT)).toMatch(/at least 10/);
  });
});
