import { describe, expect, it } from 'vitest';
import { formatBytes, formatDuration, progressLine } from '../../../host/util/progress.js';

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

describe('progressLine with phases, details and the elapsed time', () => {
  /** A line like the harness install's: phases, a count whose total may be unknown, a detail, the elapsed time. */
  function phased(isTTY: boolean) {
    const written: string[] = [];
    let now = 0;
    const line = progressLine('harness', 'packages', { isTTY, write: (t: string) => written.push(t) }, () => now, {
      elapsed: true,
    });
    return { line, written, at: (ms: number) => void (now = ms) };
  }

  it('names the phase, shows a change of phase at once (past the 5 s of a pipe), and starts its counts over', () => {
    const { line, written, at } = phased(false);
    line.phase('resolving the pinned versions'); // within the first second: quiet
    at(1000);
    line.tick();
    at(1500);
    line.phase('downloading and unpacking');
    at(2000);
    line.update(37, 112, '412.5 MiB on disk'); // too soon after the phase line
    at(6500);
    line.update(111, 112, '1.1 GiB on disk');
    at(65_000);
    line.update(112, 112, '1.2 GiB on disk');
    line.finish();
    expect(written).toEqual([
      'harness: resolving the pinned versions, 1s\n',
      'harness: downloading and unpacking, 1s\n',
      'harness: downloading and unpacking 111 of 112 packages (99%), 1.1 GiB on disk, 6s\n',
      'harness: downloading and unpacking 112 of 112 packages (100%), 1.2 GiB on disk, 1m05s\n',
    ]);
  });

  it('on a pipe, ticks print at most one line every 5 s however often they come', () => {
    const { line, written, at } = phased(false);
    line.phase('downloading');
    for (let ms = 1000; ms <= 21_000; ms += 250) {
      at(ms);
      line.tick();
    }
    expect(written).toEqual([
      'harness: downloading, 1s\n',
      'harness: downloading, 6s\n',
      'harness: downloading, 11s\n',
      'harness: downloading, 16s\n',
      'harness: downloading, 21s\n',
    ]);
  });

  it('shows a count without a total as a count only, and clears a terminal line at the end', () => {
    const { line, written, at } = phased(true);
    at(3_725_000);
    line.update(5, null);
    line.finish();
    expect(written).toEqual(['\r\x1b[2Kharness: 5 packages, 1h02m', '\r\x1b[2K']);
  });

  it("with quietMs 0 (the CLI's --progress) names every phase at once, from the first millisecond", () => {
    const written: string[] = [];
    let now = 0;
    const stream = { isTTY: false, write: (t: string) => written.push(t) };
    const line = progressLine('install', '', stream, () => now, { elapsed: true, quietMs: 0 });
    line.phase('fetching');
    now = 40;
    line.phase('checking');
    line.finish();
    expect(written).toEqual(['install: fetching, 0s\n', 'install: checking, 0s\n']);
  });

  it('formats durations and sizes for a person', () => {
    expect([999, 8_000, 65_000, 3_599_000, 3_725_000].map(formatDuration)).toEqual([
      '0s',
      '8s',
      '1m05s',
      '59m59s',
      '1h02m',
    ]);
    expect([0, 1023, 1024, 432_500_000, 1_250_000_000].map(formatBytes)).toEqual([
      '0 B',
      '1023 B',
      '1.0 KiB',
      '412.5 MiB',
      '1.2 GiB',
    ]);
  });
});
