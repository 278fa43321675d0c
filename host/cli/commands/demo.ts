import { applyConfig } from '../../bindings/apply.js';
import type { HostConfig } from '../../config/hostConfig.js';
import { TOKENS } from '../../di/tokens.js';
import { harnessReports } from '../../harness/harnesses.js';
import { discoverRunners } from '../../plugins/catalog.js';
import { probeMachine } from '../../sandbox/probe.js';
import { describeRecovery, openHost } from '../../start.js';
import type { Renderer } from '../render.js';
import { finishRun, withInterrupts } from './run.js';

/** The demo's chat message, and what the scripted model answers at each step. */
const DEMO_PROMPT = 'Say hello from inside the paddock sandbox, please.';
const TOOL_OUTPUT = 'Hello from inside the paddock sandbox';

/**
 * The demo configuration: paddock's built-in SCRIPTED model (deterministic, not an LLM) and a
 * binding that runs the real Claude Code CLI on it. The script makes Claude Code run one Bash
 * `echo` (allowed by the binding, run inside the sandbox), then answer with what it saw.
 */
function demoConfig(sandbox: 'bwrap' | 'process') {
  return {
    resources: {
      models: [
        {
          id: 'demo-scripted',
          name: 'SCRIPTED demo model (not a real LLM)',
          provider: 'scripted',
          model: 'scripted-demo',
          script: [
            {
              match: 'Say hello from inside',
              tool: {
                name: 'Bash',
                input: { command: `echo ${TOOL_OUTPUT}`, description: 'Say hello from the sandbox' },
              },
            },
            {
              match: TOOL_OUTPUT,
              reply:
                `Claude Code ran \`echo\` inside the ${sandbox} sandbox and it printed: "${TOOL_OUTPUT}". (This ` +
                `answer comes from paddock's scripted demo model, not a real LLM: no key, no network.)`,
              chunks: 8,
            },
          ],
        },
      ],
    },
    bindings: [
      {
        id: 'demo',
        description: 'paddock demo: Claude Code on the scripted model',
        runner: 'claude-code',
        route: { platform: 'demo', bot: 'demo' },
        grants: { models: ['demo-scripted'] },
        config: { allowedTools: ['Bash(echo:*)'], maxTurns: 4 },
        sandbox,
        limits: { wallClockMs: 120_000 },
      },
    ],
  };
}

/**
 * `paddock demo`: a sample chat event through the real Claude Code CLI, in the sandbox, against
 * the host gateway's scripted model — offline, no key. Adds the demo model and binding to the
 * data folder's configuration (ids `demo-scripted` and `demo`).
 */
export async function demoCommand(config: HostConfig, renderer: Renderer): Promise<number> {
  const claude = harnessReports().find((h) => h.name === 'claude')!;
  if (!claude.version) {
    renderer.note(`paddock demo needs the Claude Code CLI: ${claude.problem}`);
    return 1;
  }
  const machine = probeMachine();
  const sandbox = machine.bwrap.available ? 'bwrap' : 'process';
  const { container, store, recovery } = await openHost(config);
  for (const line of describeRecovery(recovery)) renderer.note(line);
  try {
    applyConfig(
      store,
      demoConfig(sandbox),
      {
        catalog: discoverRunners(config.runnerDirs),
        mountRoots: config.mountRoots ?? [],
        redactor: container.resolve(TOKENS.Redactor),
      },
      { by: 'paddock demo' },
    );
    renderer.note(
      `model: demo-scripted — paddock's SCRIPTED model (deterministic, not a real LLM); harness: Claude Code ` +
        `${claude.version}; sandbox: ` +
        `${sandbox}${machine.bwrap.available ? '' : ` (bwrap is not available: ${machine.bwrap.why})`}`,
    );
    const dispatcher = container.resolve(TOKENS.Dispatcher);
    return await withInterrupts(renderer, async (signal) => {
      const ticket = await dispatcher.dispatch(
        {
          id: `demo-${Date.now()}-${process.pid}`,
          type: 'message',
          platform: 'demo',
          bot: 'demo',
          conversation: { type: 'private', id: 'demo' },
          sender: { id: 'you', name: 'You' },
          message: { parts: [{ type: 'text', text: DEMO_PROMPT }] },
          receivedAt: new Date().toISOString(),
        },
        { onStart: (info) => renderer.started(info), onUpdate: (update, seq) => renderer.update(update, seq) },
      );
      if (ticket.status === 'duplicate' || ticket.status === 'appended') return 0;
      signal.addEventListener(
        'abort',
        () => dispatcher.cancelWherever(ticket.runId, String((signal.reason as Error)?.message ?? 'cancelled')),
        { once: true },
      );
      return finishRun(renderer, await ticket.done);
    });
  } finally {
    await container.resolve(TOKENS.Gateway).close();
    store.close();
  }
}
