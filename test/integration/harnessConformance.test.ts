// runRunnerConformance for every built-in runner that needs a host: claude-code and codex (real
// CLIs) and local-agent, each as a real process against a real gateway with the scripted model.
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openScriptedRun } from '../../host/gateway/scriptedRun.js';
import { gatewayRequests } from '../../host/gateway/hostRequests.js';
import { HARNESS_DIR } from '../../host/harness/harnesses.js';
import { compileNodeEntry } from '../../host/plugins/compileEntry.js';
import { tableHandler } from '../../host/runs/hostRequestTable.js';
import { runRunnerConformance, spawnRunnerProcess } from '../../sdk/testing/index.js';
import { repoPath } from '../helpers/fixtures.js';
import { tempHost } from '../helpers/host.js';

const host = tempHost();

/** Runs for runners on the scripted model: 30 chunks 200 ms apart make a six-second answer to cancel. */
const SCRIPTED_RUNS = { sample: { text: 'SAY:conformant' }, slow: { text: 'SLOW:200 LONG:30' } };
/** The acp runner on the fixture ACP agent (its SLOW prompt streams until session/cancel). */
const ACP_CONFIG = { command: process.execPath, args: [repoPath('test/fixtures/acp/agent.mjs')] };
afterAll(() => host.close());

async function conformance(
  runner: string,
  runs: {
    sample: { text: string; config?: Record<string, unknown> };
    slow: { text: string; config?: Record<string, unknown> };
  } = SCRIPTED_RUNS,
) {
  const handle = await openScriptedRun(host.gateway, `run-conf-${runner}`);
  const root = mkdtempSync(join(tmpdir(), `paddock-conf-${runner}-`));
  const ws = {
    root,
    in: join(root, 'in'),
    out: join(root, 'out'),
    tmp: join(root, 'tmp'),
    session: join(root, 'session'),
  };
  const home = join(root, 'home');
  for (const d of [ws.in, ws.out, ws.tmp, ws.session, home]) mkdirSync(d, { recursive: true });
  const script = await compileNodeEntry(repoPath(`runners/${runner}/index.ts`));
  try {
    return await runRunnerConformance(
      () =>
        spawnRunnerProcess(process.execPath, [script], {
          stderr: 'ignore',
          env: {
            PATH: process.env.PATH,
            HOME: home,
            TMPDIR: ws.tmp,
            PADDOCK_RUN_TOKEN: handle.token,
            PADDOCK_HARNESS_DIR: HARNESS_DIR,
          },
        }),
      {
        sampleRun: runs.sample,
        slowRun: runs.slow,
        cancelGraceMs: 5_000,
        stepTimeoutMs: 30_000,
        host: {
          binding: {
            models: [{ id: 'sm', provider: 'scripted', model: 'scripted-1' }],
            hostRequests: ['model/complete'],
            gateway: {
              baseUrl: handle.baseUrl,
              anthropicBaseUrl: handle.baseUrl,
              openaiBaseUrl: `${handle.baseUrl}/v1`,
              mcp: {},
              tokenEnv: 'PADDOCK_RUN_TOKEN',
            },
            workspace: ws,
          },
          hostRequests: tableHandler(gatewayRequests(host.gateway, handle)),
        },
      },
    );
  } finally {
    await handle.close();
  }
}

describe('runner conformance of the harness and agent runners (real processes, real gateway)', () => {
  for (const runner of ['claude-code', 'codex', 'local-agent']) {
    it(`${runner} passes`, async () => {
      const report = await conformance(runner);
      expect(report.failures).toEqual([]);
      expect(report.passed).toBe(true);
    }, 180_000);
  }
  it('acp passes (driving the fixture ACP agent)', async () => {
    const report = await conformance('acp', {
      sample: { text: 'SAY:conformant', config: ACP_CONFIG },
      slow: { text: 'SLOW', config: ACP_CONFIG },
    });
    expect(report.failures).toEqual([]);
    expect(report.passed).toBe(true);
  }, 180_000);
});
