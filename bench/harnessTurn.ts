import { execa } from 'execa';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyConfig } from '../host/bindings/apply.js';
import { openScriptedRun } from '../host/gateway/scriptedRun.js';
import { parseLimits } from '../host/config/limits.js';
import { configureContainer } from '../host/di/configure.js';
import { TOKENS } from '../host/di/tokens.js';
import { HARNESS_DIR } from '../host/harness/harnesses.js';
import { discoverRunners } from '../host/plugins/catalog.js';
import { claudeEnv } from '../sdk/harness/claudeEnv.js';
import { claudeArgs } from '../runners/claude-code/claudeCode.js';
import { locateHarness } from '../sdk/harness/locate.js';
import { fmt, summarize } from './stats.js';

/**
 * A whole Claude Code turn through paddock (dispatch → bwrap sandbox → claude-code runner → real
 * CLI → gateway → scripted model → stored outcome) against the same CLI started bare from a shell
 * with the same gateway and reply, interleaved. The difference is what paddock adds around a turn.
 */
export async function harnessBench(count = 12) {
  const cli = locateHarness('claude', { ...process.env, PADDOCK_HARNESS_DIR: HARNESS_DIR });
  if (!cli) throw new Error('the Claude Code CLI is not installed: bash scripts/install-harnesses.sh');
  const dataDir = mkdtempSync(`${tmpdir()}/paddock-bench-harness-`);
  const config = { dataDir, limits: parseLimits(), runnerDirs: [], logLevel: 'silent', keepWorkspaces: false };
  const container = configureContainer(config);
  const store = container.resolve(TOKENS.Store);
  applyConfig(
    store,
    {
      resources: { models: [{ id: 'sm', provider: 'scripted', model: 'scripted-1' }] },
      bindings: [
        { id: 'bench', runner: 'claude-code', route: { bot: 'bench' }, sandbox: 'bwrap', grants: { models: ['sm'] } },
      ],
    },
    { catalog: discoverRunners([]), mountRoots: [] },
    { by: 'bench' },
  );
  const dispatcher = container.resolve(TOKENS.Dispatcher);
  const gateway = container.resolve(TOKENS.Gateway);
  const bare = await openScriptedRun(gateway, 'run-bench-bare');
  const times = { paddock: [] as number[], bare: [] as number[] };
  for (let i = 0; i < count + 2; i++) {
    let t = performance.now();
    const ticket = await dispatcher.dispatch({
      id: `bench-${i}`,
      type: 'message',
      platform: 'bench',
      bot: 'bench',
      conversation: { type: 'private', id: `c${i}` },
      sender: { id: 'u' },
      message: { parts: [{ type: 'text', text: 'SAY:benchmark' }] },
      receivedAt: new Date().toISOString(),
    });
    if (ticket.status === 'duplicate') throw new Error('duplicate');
    const outcome = await ticket.done;
    if (outcome.status !== 'completed') throw new Error(`paddock run: ${outcome.reason}`);
    const p = performance.now() - t;
    const home = mkdtempSync(join(tmpdir(), 'bench-claude-'));
    t = performance.now();
    // Asynchronously: the gateway it calls lives in this process.
    await execa(
      cli.command,
      [
        ...cli.prefix,
        ...claudeArgs({
          prompt: 'SAY:benchmark',
          model: 'sm',
          permissionMode: 'dontAsk',
          allowedTools: [],
          disallowedTools: [],
          maxTurns: 4,
        }),
      ],
      {
        env: claudeEnv({
          path: process.env.PATH ?? '/usr/bin:/bin',
          home,
          tmp: home,
          baseUrl: bare.baseUrl,
          token: bare.token,
          model: 'sm',
        }),
        extendEnv: false,
        cwd: home,
        stdin: 'ignore',
      },
    );
    const b = performance.now() - t;
    rmSync(home, { recursive: true, force: true });
    if (i >= 2) {
      times.paddock.push(p);
      times.bare.push(b);
    }
  }
  await bare.close();
  await gateway.close();
  store.close();
  rmSync(dataDir, { recursive: true, force: true });
  const p = summarize(times.paddock);
  const b = summarize(times.bare);
  console.log(`\n## Harness turn (${count} Claude Code text turns each, interleaved, first 2 dropped; scripted model)`);
  console.log('method: paddock = dispatch → bwrap → claude-code runner → real CLI → gateway → stored outcome;');
  console.log('        baseline = the same CLI, same flags and env, started bare against the same gateway.');
  console.log(`paddock: median ${fmt(p.median, 0)} ms, p90 ${fmt(p.p90, 0)} ms`);
  console.log(`bare CLI: median ${fmt(b.median, 0)} ms, p90 ${fmt(b.p90, 0)} ms`);
  console.log(
    `ratio paddock / bare (median): ${fmt(p.median / b.median, 2)}× (+${fmt(p.median - b.median, 0)} ms per turn)`,
  );
  return { paddock: p, bare: b };
}
