import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HelperSpawner } from '../../../host/sandbox/helperSpawner.js';
import type { ProbeExecResult } from '../../../host/sandbox/probeSteps.js';

const ENV = { PATH: '/usr/bin:/bin' };

/** A `/bin/sh -c` helper step. */
const sh = (script: string, timeoutMs = 10_000) => ({ file: '/bin/sh', args: ['-c', script], env: ENV, timeoutMs });

/** Whether a process exists (a zombie counts as gone: it was killed). */
function alive(pid: number): boolean {
  try {
    return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

const stdout = (r: ProbeExecResult) => (r.ok ? r.stdout.trim() : `failed: ${r.error.message}`);

describe('the helper spawner (host/sandbox/helperSpawner.ts)', () => {
  it('runs at most `concurrency` helpers at once; the others wait in order, and every one answers', async () => {
    // Each helper enters a folder of "running now" markers, counts them, holds for 150 ms, leaves.
    const dir = mkdtempSync(join(tmpdir(), 'paddock-helper-bound-'));
    mkdirSync(join(dir, 'in'));
    const spawner = new HelperSpawner({ concurrency: 2 });
    const script = (i: number) =>
      `mkdir ${dir}/in/${i}; n=$(ls ${dir}/in | wc -l); echo ${i} >> ${dir}/order; sleep 0.15; rmdir ${dir}/in/${i}; ` +
      `echo $n`;
    const counts = (await Promise.all(Array.from({ length: 8 }, (_, i) => spawner.run(sh(script(i)))))).map(stdout);
    expect(
      counts.every((n) => n === '1' || n === '2'),
      `running at once, as each helper saw: ${counts}`,
    ).toBe(true);
    // In order: the two first start together, then each next one as a slot frees.
    const order = readFileSync(join(dir, 'order'), 'utf8').trim().split('\n').map(Number);
    expect(order.slice(0, 2).sort()).toEqual([0, 1]);
    expect(order.slice(2).every((i) => i >= 2)).toBe(true);

    const serial = new HelperSpawner({ concurrency: 1 });
    const one = await Promise.all([3, 1, 2].map((i) => serial.run(sh(`echo ${i} >> ${dir}/serial`))));
    expect(one.every((r) => r.ok)).toBe(true);
    expect(readFileSync(join(dir, 'serial'), 'utf8')).toBe('3\n1\n2\n');
  });

  it("a waiting helper's timeout starts when it starts, not while it waits", async () => {
    const spawner = new HelperSpawner({ concurrency: 1, answerGraceMs: 200 });
    const first = spawner.run(sh('sleep 0.6; echo first'));
    // Waits ≈ 600 ms, far past its own 300 ms timeout and the grace, then runs for 50 ms.
    const second = spawner.run(sh('sleep 0.05; echo second', 300));
    expect((await Promise.all([first, second])).map(stdout)).toEqual(['first', 'second']);
  });

  it('a spawner killed from outside: what it ran fails, what waited runs on a new spawner', async () => {
    const spawner = new HelperSpawner({ concurrency: 1 });
    const running = spawner.run(sh('sleep 5'));
    const waiting = spawner.run(sh('echo waited'));
    const first = spawner.pid!;
    process.kill(first, 'SIGKILL');
    expect(stdout(await running)).toBe('failed: the helper spawner exited before /bin/sh finished');
    expect(stdout(await waiting)).toBe('waited');
    expect(spawner.pid).not.toBe(first);
  });

  it("a spawner that stops answering is killed once a helper's timeout and the grace have passed", async () => {
    const spawner = new HelperSpawner({ concurrency: 1, answerGraceMs: 300 });
    const started = Date.now();
    const running = spawner.run(sh('echo never read', 700));
    const waiting = spawner.run(sh('echo next'));
    const stuck = spawner.pid!;
    process.kill(stuck, 'SIGSTOP');
    try {
      expect(stdout(await running)).toBe(
        'failed: the helper spawner was killed (no answer for /bin/sh within 1000 ms) before /bin/sh finished',
      );
      expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
      // Fail closed: the stuck spawner is gone, and a new one serves the helper that had not started.
      expect(stdout(await waiting)).toBe('next');
      expect(spawner.pid).not.toBe(stuck);
      expect(alive(stuck)).toBe(false);
    } finally {
      if (alive(stuck)) process.kill(stuck, 'SIGKILL');
    }
  });

  it('refuses a bound that is not a whole number of at least 1', () => {
    expect(() => new HelperSpawner({ concurrency: 0 })).toThrow(/whole number ≥ 1, not 0/);
    expect(() => new HelperSpawner({ concurrency: 1.5 })).toThrow(RangeError);
  });
});
