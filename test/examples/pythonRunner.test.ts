import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunOutcome } from '../../host/process/outcome.js';
import { loadManifest, runnerCommand } from '../../host/plugins/resolveRunner.js';
import { runRunnerConformance, spawnRunnerProcess } from '../../sdk/testing/index.js';
import { jsonLines, paddock } from '../helpers/cli.js';
import { repoPath } from '../helpers/fixtures.js';

const DIR = repoPath('examples/python-runner');
const SLOW = { text: 'Ada Lovelace', config: { pauseMs: 400 } };

/** python3 ≥ 3.9 on PATH, or the test fails saying so (scripts/setup.sh installs it). */
function requirePython(): void {
  let version: string;
  try {
    version = execFileSync('python3', ['-c', 'import sys; print("%d.%d" % sys.version_info[:2])'], {
      encoding: 'utf8',
    }).trim();
  } catch (error) {
    throw new Error(`python3 is missing (run scripts/setup.sh, which installs it): ${(error as Error).message}`);
  }
  const [major, minor] = version.split('.').map(Number);
  expect(major === 3 && minor! >= 9, `python3 ${version} is older than 3.9`).toBe(true);
}

/** Starts the runner the way the host does: the manifest's command line, {runnerDir} expanded. */
async function hostLaunch() {
  const { command, args } = await runnerCommand(loadManifest(DIR), mkdtempSync(join(tmpdir(), 'paddock-bundles-')));
  expect([command, ...args]).toEqual(['python3', join(DIR, 'runner.py')]);
  return () => spawnRunnerProcess(command, args, { stderr: 'ignore' });
}

// examples/python-runner was written from docs/protocol.md alone (standard library only).
describe('examples/python-runner', () => {
  it('passes the conformance suite, started as the host starts it', async () => {
    requirePython();
    const report = await runRunnerConformance(await hostLaunch(), { slowRun: SLOW });
    expect(report.failures).toEqual([]);
    expect(report.checks.length).toBeGreaterThanOrEqual(8);
  });

  it('makes host requests (state/get, state/set) under the suite’s grant checks, and still passes', async () => {
    requirePython();
    const state = new Map<string, unknown>();
    const calls: string[] = [];
    const report = await runRunnerConformance(await hostLaunch(), {
      slowRun: SLOW,
      host: {
        binding: { hostRequests: ['state/get', 'state/set'], stateScope: 'session' },
        hostRequests: {
          handle: async (method, params) => {
            calls.push(method);
            const key = String(params.key);
            if (method === 'state/get')
              return state.has(key) ? { found: true, value: state.get(key) } : { found: false };
            state.set(key, params.value);
            return { ok: true };
          },
        },
      },
    });
    expect(report.failures).toEqual([]);
    expect(calls).toContain('state/get');
    expect(calls).toContain('state/set');
    expect(state.get('turns')).toBeGreaterThanOrEqual(3); // one per run the suite made with state granted
  });

  it('runs through `paddock run`, counting turns in host state', async () => {
    requirePython();
    const r = await paddock(
      ['run', '--runner', 'examples/python-runner', '--text', 'Ada', '--json', '--config', '{"pauseMs":0}'],
      {
        dataDir: mkdtempSync(join(tmpdir(), 'paddock-example-')),
      },
    );
    expect(r.exitCode, r.stderr).toBe(0);
    const outcome = jsonLines(r.stdout).find((l) => l.type === 'outcome')!.outcome as RunOutcome;
    expect(outcome.result?.output?.parts).toEqual([{ type: 'text', text: 'Hello, Ada! (turn 1)' }]);
    expect(outcome.runner).toEqual({ name: 'python-runner', version: '1.0.0', protocolVersion: 1 });
    expect(outcome.counters.hostRequests).toBe(2);
  });
});
