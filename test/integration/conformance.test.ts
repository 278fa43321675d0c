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
    const report = await runRunnerConformance(await processFactory('examples/hello-runner/index.ts'), { slowRun: SLOW_HELLO });
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
});
