import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { execThroughSpawner } from '../../../host/sandbox/helperSpawner.js';
import { exec, ProbeExecError, runProbeAsync, runProbeSync, type Probe } from '../../../host/sandbox/probeSteps.js';

const ENV = { PATH: '/usr/bin:/bin' };

/** The asynchronous driver with each helper started by the helper spawner (how a run mounts its quota). */
const runThroughSpawner = <T>(probe: Probe<T>) => runProbeAsync(probe, execThroughSpawner);

/** A probe with a success, a failure caught where it happened, and a value computed from both. */
function* sample(): Probe<{ first: string; failed: string; after: string }> {
  const first = (yield* exec('/bin/sh', ['-c', 'echo one'], ENV)).trim();
  let failed = '';
  try {
    yield* exec('/bin/sh', ['-c', 'echo broken >&2; exit 3'], ENV);
  } catch (error) {
    failed = `${(error as Error).constructor.name}: ${(error as ProbeExecError).stderr}`;
  }
  const after = (yield* exec('/bin/sh', ['-c', 'echo "$0-two"', first], ENV)).trim();
  return { first, failed, after };
}

describe('probe steps driven blocking or not (host/sandbox/probeSteps.ts)', () => {
  it('either driver gives one answer: stdout, a failure thrown at its step with its stderr', async () => {
    const expected = { first: 'one', failed: 'ProbeExecError: broken', after: 'one-two' };
    expect(runProbeSync(sample())).toEqual(expected);
    await expect(runProbeAsync(sample())).resolves.toEqual(expected);
    await expect(runThroughSpawner(sample())).resolves.toEqual(expected);
  });

  it('a helper that is missing, killed by its timeout, or silent on failure is a failure that says why', async () => {
    function* failing(file: string, args: string[], timeoutMs?: number): Probe<string> {
      try {
        yield* exec(file, args, ENV, timeoutMs);
        return 'ran';
      } catch (error) {
        return (error as ProbeExecError).stderr;
      }
    }
    for (const run of [runProbeSync, runProbeAsync, runThroughSpawner] as const) {
      expect(await run(failing('/nonexistent/helper', []))).toMatch(/ENOENT/);
      expect(await run(failing('/bin/sh', ['-c', 'exec sleep 30'], 200))).toBe('/bin/sh timed out after 200 ms');
      // No stderr: the error's own message names the command and its exit, never an empty reason.
      expect(await run(failing('/bin/sh', ['-c', 'exit 4'], 10_000))).toMatch(/Command failed: \/bin\/sh -c exit 4/);
    }
  });

  it('a helper gets only the fixed environment it is given, never the host process environment', async () => {
    process.env.PADDOCK_PROBE_CANARY = 'canary-7f3a';
    try {
      const env = function* (): Probe<string> {
        return yield* exec('/usr/bin/env', [], ENV);
      };
      for (const out of [runProbeSync(env()), await runProbeAsync(env()), await runThroughSpawner(env())]) {
        expect(out).not.toContain('canary-7f3a');
        expect(out.trim().split('\n').sort()).toEqual(['PATH=/usr/bin:/bin']);
      }
    } finally {
      delete process.env.PADDOCK_PROBE_CANARY;
    }
  });

  it('the asynchronous driver leaves the event loop free while a helper runs', async () => {
    // The helper blocks until this process writes to a FIFO from the event loop: a driver that blocked would
    // deadlock (and fail by the helper's timeout), this one gets the line back.
    const dir = mkdtempSync(join(tmpdir(), 'paddock-probe-steps-'));
    const fifo = join(dir, 'fifo');
    execFileSync('/usr/bin/mkfifo', [fifo]);
    function* waits(): Probe<string> {
      return yield* exec('/bin/cat', [fifo], ENV, 10_000);
    }
    for (const run of [runProbeAsync, runThroughSpawner]) {
      const done = run(waits());
      await new Promise((resolve) => setImmediate(resolve));
      writeFileSync(fifo, 'from the event loop\n'); // blocks until the helper opened the FIFO for reading
      await expect(done).resolves.toBe('from the event loop\n');
    }
  });

  it('a helper refused before it starts (a NUL in an argument) fails alone; the spawner serves the next', async () => {
    const refused = await execThroughSpawner({ file: '/bin/echo', args: ['a\0b'], env: ENV, timeoutMs: 5000 });
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(refused.error.message).toMatch(/null bytes/);
    await expect(execThroughSpawner({ file: '/bin/echo', args: ['next'], env: ENV, timeoutMs: 5000 })).resolves.toEqual(
      { ok: true, stdout: 'next\n' },
    );
  });

  it('helpers run through the spawner answer concurrently, and an idle spawner keeps no process alive', async () => {
    const many = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        runThroughSpawner(
          (function* (): Probe<string> {
            return yield* exec('/bin/sh', ['-c', `echo ${i}`], ENV);
          })(),
        ),
      ),
    );
    expect(many.map((out) => out.trim())).toEqual(Array.from({ length: 20 }, (_, i) => String(i)));
    // A process that used the spawner ends by itself once it has nothing else to do (vitest's timeout otherwise).
    const out = execFileSync(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        "const { execThroughSpawner } = await import('./host/sandbox/helperSpawner.ts');" +
          "const r = await execThroughSpawner({ file: '/bin/echo', args: ['used'], env: {}, timeoutMs: 5000 });" +
          'console.log(r.ok && r.stdout.trim());',
      ],
      { encoding: 'utf8', timeout: 60_000 },
    );
    expect(out.trim()).toBe('used');
  });
});
