import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { echoRunner } from '../../runners/echo/runner.js';
import { helloRunner } from '../../examples/hello-runner/runner.js';
import { runRunnerConformance, spawnRunnerProcess, inProcessRunner } from '../../sdk/testing/index.js';
import { compileNodeEntry } from '../../host/plugins/compileEntry.js';
import { repoPath } from '../helpers/fixtures.js';

const SLOW_ECHO = { text: 'one two three four five six seven eight nine ten', config: { delayMs: 150 } };
const SLOW_HELLO = { text: 'Ada', config: { pauseMs: 300 } };

async function processFactory(entry: string) {
  const script = await compileNodeEntry(repoPath(entry));
  return () => spawnRunnerProcess(process.execPath, [script], { stderr: 'ignore' });
}

describe('runner conformance suite', () => {
  it('passes for the echo runner as a real process', async () => {
    const report = await runRunnerConformance(await processFactory('runners/echo/index.ts'), { slowRun: SLOW_ECHO });
    expect(report.failures).toEqual([]);
    expect(report.checks.length).toBeGreaterThanOrEqual(8);
  });

  it('passes for examples/hello-runner as a real process', async () => {
    const report = await runRunnerConformance(await processFactory('examples/hello-runner/index.ts'), {
      slowRun: SLOW_HELLO,
    });
    expect(report.failures).toEqual([]);
  });

  it('passes for the echo runner served in process', async () => {
    const report = await runRunnerConformance(() => inProcessRunner(echoRunner), { slowRun: SLOW_ECHO });
    expect(report.failures).toEqual([]);
  });

  it('passes for hello-runner served in process', async () => {
    const report = await runRunnerConformance(() => inProcessRunner(helloRunner), { slowRun: SLOW_HELLO });
    expect(report.failures).toEqual([]);
  });

  it('fails, naming each broken behaviour, for runners that misbehave', async () => {
    const hangs = await runRunnerConformance(await processFactory('test/fixtures/runners/ignoresCancel.ts'), {
      slowRun: {},
      stepTimeoutMs: 1_500,
      cancelGraceMs: 500,
      exitGraceMs: 500,
    });
    expect(hangs.passed).toBe(false);
    const failed = hangs.checks.filter((c) => !c.ok).map((c) => c.name);
    expect(failed).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^cancel: run\/cancel mid-run/),
        expect.stringMatching(/^run: a sample run completes/),
        expect.stringMatching(/^shutdown: answers shutdown/),
      ]),
    );
    const garbage = await runRunnerConformance(await processFactory('test/fixtures/runners/garbageOnStdout.ts'), {
      slowRun: {},
      stepTimeoutMs: 1_000,
    });
    expect(garbage.failures.join('\n')).toMatch(/protocol violations: not JSON: "Loading model weights/);
  });

  it("shows the runner's exit and stderr when it fails to start", async () => {
    const report = await runRunnerConformance(await processFactory('test/fixtures/runners/crashOnStart.ts'), {
      slowRun: {},
      stepTimeoutMs: 2_000,
      exitGraceMs: 500,
    });
    expect(report.passed).toBe(false);
    const handshake = report.checks.find((c) => c.name.startsWith('handshake'))!;
    expect(handshake.ok).toBe(false);
    expect(handshake.ended).toEqual({ code: 3, signal: null });
    expect(handshake.stderrTail).toBe('fatal: fixture cannot start (missing config)');
    // The check's own reason stays apart from how the runner ended; the failure line has all three.
    expect(handshake.detail).not.toMatch(/fatal: fixture|exited with code/);
    expect(report.failures[0]).toMatch(/^handshake: .+; runner process: exited with code 3; runner stderr: fatal: /);
    expect(report.failures[0]).toMatch(/; runner stderr: fatal: fixture cannot start \(missing config\)$/);
    // A runner that works keeps its stderr out of the report (there is nothing to explain).
    const fine = await runRunnerConformance(await processFactory('runners/echo/index.ts'), { slowRun: SLOW_ECHO });
    expect(fine.checks.every((c) => c.detail === undefined && !c.ended && c.stderrTail === undefined)).toBe(true);
  });

  it('quotes only the end of a flood of stderr', async () => {
    const report = await runRunnerConformance(
      async () => {
        const script = await compileNodeEntry(repoPath('test/fixtures/runners/crashOnStart.ts'));
        // The same crash, after 100 KiB of noise on stderr.
        return spawnRunnerProcess(
          process.execPath,
          ['-e', `process.stderr.write('noise '.repeat(20000)); import(${JSON.stringify(pathToFileURL(script).href)})`],
          { stderr: 'ignore' },
        );
      },
      { slowRun: {}, stepTimeoutMs: 2_000, exitGraceMs: 500 },
    );
    const handshake = report.checks.find((c) => c.name.startsWith('handshake'))!;
    expect(handshake.stderrTail).toMatch(/(noise )+fatal: fixture cannot start \(missing config\)$/);
    expect(handshake.stderrTail!.length).toBe(2_000);
    expect(report.failures[0]).toMatch(/runner stderr: …(noise )+.*fatal: fixture cannot start/s);
    expect(report.failures[0]!.length).toBeLessThan(2_400);
  });
});
