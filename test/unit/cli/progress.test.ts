import { describe, expect, it } from 'vitest';
import { progressLine } from '../../../host/cli/progress.js';

/** A stream that keeps what is written, and a clock the test moves. */
function harness(isTTY: boolean) {
  const written: string[] = [];
  let now = 0;
  const line = progressLine('verify', 'records', { isTTY, write: (t: string) => written.push(t) }, () => now);
  return { line, written, at: (ms: number) => void (now = ms) };
}

describe('progressLine', () => {
  it('says nothing for a job that ends within a second', () => {
    const { line, written, at } = harness(true);
    at(999);
    line.update(10, 100);
    line.finish();
    expect(written).toEqual([]);
  });

  it('rewrites one line on a terminal at most every 200 ms, and clears it at the end', () => {
    const { line, written, at } = harness(true);
    at(1000);
    line.update(1234567, 2000000);
    at(1100);
    line.update(1300000, 2000000); // too soon: not shown
    at(1200);
    line.update(2000000, 2000000);
    line.finish();
    expect(written).toEqual([
      '\r\x1b[2Kverify: 1 234 567 of 2 000 000 records (61%)',
      '\r\x1b[2Kverify: 2 000 000 of 2 000 000 records (100%)',
      '\r\x1b[2K',
    ]);
  });

  it('prints whole lines to a pipe every 5 s and leaves them', () => {
    const { line, written, at } = harness(false);
    at(1500);
    line.update(1, 4);
    at(6000);
    line.update(2, 4);
    at(6500);
    line.update(3, 4);
    line.finish();
    expect(written).toEqual(['verify: 1 of 4 records (25%)\n', 'verify: 3 of 4 records (75%)\n']);
  });
});
