import { describe, expect, it } from 'vitest';
import { parseCampaignArgs } from '../../campaigns/lib/args.js';
import { caseSeed, seededRandom } from '../../campaigns/lib/random.js';
import { createReport } from '../../campaigns/lib/report.js';

describe('campaign report', () => {
  it('prints totals and every violation with its seed, and exits 1 only when there is a violation', () => {
    const lines: string[] = [];
    const clean = createReport('demo', 7, (l) => lines.push(l));
    clean.count('cases');
    clean.count('cases', 2);
    clean.total('kills', 'none');
    expect(clean.finish()).toBe(0);
    expect(lines).toContain('  cases: 3');
    expect(lines).toContain('  kills: none');
    expect(lines.at(-1)).toBe('## demo: PASS');

    lines.length = 0;
    const dirty = createReport('demo', 7, (l) => lines.push(l));
    dirty.violation(12345, 'seq gap in session s1');
    expect(dirty.finish()).toBe(1);
    expect(lines.filter((l) => l.includes('seed=12345') && l.includes('seq gap in session s1'))).toHaveLength(2);
    expect(lines.at(-1)).toBe('## demo: FAIL (1 violations)');
  });
});

describe('campaign seeds', () => {
  it('a seed gives the same sequence, and case 0 of a campaign seeded with a case seed is that case', () => {
    const a = seededRandom(42);
    const b = seededRandom(42);
    const seqA = Array.from({ length: 5 }, a);
    expect(Array.from({ length: 5 }, b)).toEqual(seqA);
    expect(Array.from({ length: 5 }, seededRandom(43))).not.toEqual(seqA);
    const c = caseSeed(42, 17);
    expect(caseSeed(c, 0)).toBe(c);
    expect(new Set(Array.from({ length: 1000 }, (_, i) => caseSeed(42, i))).size).toBe(1000);
  });

  it('parses the command line', () => {
    expect(parseCampaignArgs(['fault', '--seed', '9', '--count', '3', '--kill-window=50'])).toEqual({
      name: 'fault',
      seed: 9,
      count: 3,
      nightly: false,
      flags: { 'kill-window': '50' },
    });
    expect(parseCampaignArgs(['soak', '--nightly']).nightly).toBe(true);
    expect(() => parseCampaignArgs(['soak', '--count', 'x'])).toThrow(/--count/);
  });
});
