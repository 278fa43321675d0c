import { execFileSync } from 'node:child_process';
import { mkdirSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import {
  defineRunner,
  eventText,
  z,
  gatewayAccess,
  hasAccess,
  locateHarness,
  harnessExitFailure,
  runHarnessTurn,
} from 'paddock/sdk';
import { CodexStreamMapper, codexArgs, codexEnv } from './codex.js';
import { AppServerSession, appServerArgs, type CodexAction, type CodexAnswer } from './appServer.js';

const TOKEN_ENV = 'PADDOCK_RUN_TOKEN';
/** The Codex version these mappings were checked against (scripts/install-harnesses.sh pins it). */
const TESTED_VERSION = '0.171.0';

/**
 * Codex: one `codex exec --json` turn per run (with approval requests granted, one `codex app-server` turn whose
 * approval requests the host answers), in the run's sandbox, with the host gateway as its
 * only model provider (the run token is the provider key), MCP only through the run's host
 * endpoints, the conversation's thread resumed from host-owned state.
 */
export const codexRunner = defineRunner({
  manifest: { name: 'codex', version: '0.1.0' },
  configSchema: z.strictObject({
    model: z.string().optional().describe('Granted model id to use; default: the first granted model.'),
    codexModel: z
      .string()
      .default('gpt-5.5')
      .describe(
        'The model name Codex is told (one of its bundled names); the gateway serves the granted model ' +
          'whatever it says.',
      ),
    sandbox: z
      .enum(['read-only', 'workspace-write', 'danger-full-access'])
      .default('read-only')
      .describe("Codex's own sandbox for the commands it runs (inside the run's sandbox)."),
  }),
  async run(event, binding, ctx) {
    const { config } = binding;
    const access = gatewayAccess(binding, config.model, 'codex');
    if (!hasAccess(access)) return access;
    const { gateway, token, model } = access;
    const cli = locateHarness('codex');
    if (!cli)
      return {
        status: 'failed',
        error: {
          code: 'harness_missing',
          message: 'the Codex CLI is not installed: run scripts/install-harnesses.sh (or put codex on PATH)',
        },
      };

    const home = process.env.HOME!;
    const tmp = process.env.TMPDIR ?? join(home, 'tmp');
    // Codex keeps its threads under CODEX_HOME: the session's folder, so resume works next run.
    const codexHome = join(binding.workspace?.session ?? home, 'codex');
    mkdirSync(codexHome, { recursive: true });
    const env = codexEnv({
      path: process.env.PATH ?? '/usr/bin:/bin',
      home,
      codexHome,
      tmp,
      tokenEnv: TOKEN_ENV,
      token,
    });
    let version: string | undefined;
    try {
      version = execFileSync(cli.command, [...cli.prefix, '--version'], {
        env,
        encoding: 'utf8',
        timeout: 20_000,
        stdio: ['ignore', 'pipe', 'pipe'],
      }).trim();
      ctx.emit({ kind: 'log', level: 'info', message: `codex version: ${version}` });
      if (!version.includes(TESTED_VERSION))
        ctx.emit({
          kind: 'log',
          level: 'warn',
          message:
            `codex ${version} is not the tested ${TESTED_VERSION}: its event formats may differ; unknown events ` +
            `are kept as logs`,
        });
    } catch (error) {
      return {
        status: 'failed',
        error: {
          code: 'harness_broken',
          message: `codex --version failed: ${(error as Error).message.split('\n')[0]}`,
        },
      };
    }

    // Read-write mounts are writable roots of Codex's own sandbox (resolved: a link under the process backend).
    const addDirs = binding.mounts.filter((m) => !m.readOnly).map((m) => realpathSync(m.path));
    // What both ways of running Codex share: the CLI, where and how it runs, and its gateway configuration.
    const cwd = binding.workspace?.root ?? process.cwd();
    const launch = { name: 'codex', command: cli.command, cwd, env, signal: ctx.signal, emit: ctx.emit.bind(ctx) };
    const options = {
      baseUrl: gateway.openaiBaseUrl,
      model,
      sandbox: config.sandbox,
      mcp: gateway.mcp,
      tokenEnv: TOKEN_ENV,
      egress: Boolean(env.HTTPS_PROXY ?? env.HTTP_PROXY),
      addDirs,
    };

    // With approvals granted, Codex runs as an app-server whose approval requests the host decides (appServer.ts).
    if (binding.hostRequests.includes('approval/request')) {
      const session = new AppServerSession({
        prompt: eventText(event),
        codexModel: config.codexModel,
        sandbox: config.sandbox,
        cwd,
        resume: ctx.resume?.external?.sessionId,
        version: version ?? TESTED_VERSION,
      });
      const ask = (action: CodexAction): Promise<CodexAnswer> =>
        ctx.approval
          .request(action, 'once')
          .catch((e: unknown) => ({ decision: 'denied' as const, reason: e instanceof Error ? e.message : String(e) }));
      const exit = await runHarnessTurn({
        ...launch,
        args: [...cli.prefix, ...appServerArgs(options)],
        map: (value) => session.map(value),
        conversation: {
          initial: session.initial(),
          answer: (value) => session.answer(value, ask),
          endAfter: () => session.endAfter(),
        },
      });
      const broken = harnessExitFailure('codex', exit);
      if (broken) return broken;
      const { mapper } = session;
      if (exit.cancelled)
        return { status: 'cancelled', ...(mapper.threadId ? { external: { sessionId: mapper.threadId } } : {}) };
      return mapper.runResult(exit, version);
    }

    const turn = async (resume: string | undefined) => {
      const mapper = new CodexStreamMapper();
      const exit = await runHarnessTurn({
        ...launch,
        args: [
          ...cli.prefix,
          ...codexArgs({ ...options, prompt: eventText(event), codexModel: config.codexModel, resume }),
        ],
        map: (value) => mapper.map(value),
      });
      return { mapper, exit };
    };

    const previous = ctx.resume?.external?.sessionId;
    let { mapper, exit } = await turn(previous);
    if (previous && !mapper.threadId && !exit.cancelled) {
      // The saved thread could not be resumed (its files are gone): start afresh and say so.
      ctx.emit({
        kind: 'log',
        level: 'warn',
        message:
          `codex: thread ${previous} could not be resumed (` +
          `${exit.stderrTail.trim().split('\n').at(-1) ?? 'no reason'}); starting a fresh thread`,
      });
      ({ mapper, exit } = await turn(undefined));
    }
    const broken = harnessExitFailure('codex', exit);
    if (broken) return broken;
    if (exit.cancelled)
      return { status: 'cancelled', ...(mapper.threadId ? { external: { sessionId: mapper.threadId } } : {}) };
    return mapper.runResult(exit, version);
  },
});
