// Every `paddock` command: its words, options, help and how it runs. Each `run` loads its module with
// a dynamic import(), so `paddock --help` or `paddock version` never loads the store, zod schemas,
// the MCP SDK or the gateway (decisions.md, Issue 12 — cli).
import type { HostConfig } from '../config/hostConfig.js';
import type { Renderer } from './render.js';
import { UsageError, type CommandContext, type CommandSpec, type Flags, type OptionSpec } from './spec.js';

const RUN_EXIT_CODES = [
  '0 completed, 1 failed, 2 usage error or invalid input, 3 quota_exceeded, 4 crashed, 5 protocol_error,',
  '124 timed_out, 130 cancelled (Ctrl-C: first press cancels, second kills)',
];

const json: OptionSpec = {
  type: 'boolean',
  help: 'machine-readable output (JSON; a run streams one JSON object per line)',
};
const runnerDir: OptionSpec = {
  type: 'string',
  multiple: true,
  value: '<dir>',
  help: 'also look for runners by name in this folder (after built-in and $PADDOCK_RUNNER_DIRS)',
};
const timeout: OptionSpec = {
  type: 'string',
  value: '<ms>',
  help: "host's default wall-clock limit of a run, in milliseconds",
};
const keepWorkspace: OptionSpec = {
  type: 'boolean',
  help: "keep the run's workspace folder after the run (removed by default)",
};
const by: OptionSpec = { type: 'string', value: '<name>', help: 'who is acting, for the audit log (default: $USER)' };
const file: OptionSpec = { type: 'string', short: 'f', value: '<file|->', help: 'the input file (- reads stdin)' };
const cancelActive: OptionSpec = { type: 'boolean', help: "also ask the binding's queued and running runs to cancel" };

async function hostConfig(ctx: CommandContext): Promise<HostConfig> {
  return { ...(await import('./hostFlags.js')).hostConfigFromFlags(ctx.flags), ...ctx.embed };
}

async function renderer(flags: Flags): Promise<Renderer> {
  const { humanRenderer, jsonRenderer } = await import('./render.js');
  return flags.json ? jsonRenderer() : humanRenderer();
}

/**
 * Start the machine probe (its helpers run bwrap, unshare, mkfs, mount) now, for a command that will run a runner:
 * it runs while the command's modules load, and openHost joins it (host/start.ts). Its failure is the blocking
 * probe's to report, where the run needs it.
 */
function startMachineProbe(): void {
  void import('../sandbox/probe.js').then((probe) => probe.primeMachineProbe()).catch(() => undefined);
}

/** A flag's string value. */
const str = (flags: Flags, name: string) => flags[name] as string | undefined;

/** The runner package commands' flags, as commands/runnerPackages.ts reads them. */
function packageFlags(flags: Flags) {
  return {
    json: flags.json === true,
    accept: flags.accept === true,
    allowNativeBuild: flags['allow-native-build'] === true,
    disableBindings: flags['disable-bindings'] === true,
    progress: flags.progress === true,
    by: str(flags, 'by'),
  };
}

/** The admin commands' flags, as commands/admin.ts reads them. */
function adminFlags(flags: Flags) {
  return {
    json: flags.json === true,
    file: str(flags, 'file'),
    prune: flags.prune === true,
    'dry-run': flags['dry-run'] === true,
    'cancel-active': flags['cancel-active'] === true,
    by: str(flags, 'by'),
  };
}

/** `paddock apply|export|resources|bindings|explain …` through commands/admin.ts. */
async function config(ctx: CommandContext, words: string[]): Promise<number> {
  const { configCommand } = await import('./commands/admin.js');
  return configCommand(await hostConfig(ctx), [...words, ...ctx.args], adminFlags(ctx.flags), ctx.out, ctx.err);
}

/** `paddock tokens …` through commands/tokens.ts. */
async function tokens(ctx: CommandContext, verb: string): Promise<number> {
  const { tokensCommand } = await import('./commands/tokens.js');
  const flags = {
    json: ctx.flags.json === true,
    tenant: str(ctx.flags, 'tenant'),
    role: str(ctx.flags, 'role'),
    name: str(ctx.flags, 'name'),
    expires: str(ctx.flags, 'expires'),
    by: str(ctx.flags, 'by'),
  };
  return tokensCommand(await hostConfig(ctx), verb, ctx.args, flags, ctx.out, ctx.err);
}

/** `paddock approvals …` and `paddock grants …` through commands/approvals.ts. */
async function approvals(ctx: CommandContext, group: 'approvals' | 'grants', verb: string): Promise<number> {
  const { approvalsCommand, grantsCommand } = await import('./commands/approvals.js');
  const flags = {
    json: ctx.flags.json === true,
    status: str(ctx.flags, 'status'),
    run: str(ctx.flags, 'run'),
    lifetime: str(ctx.flags, 'lifetime'),
    reason: str(ctx.flags, 'reason'),
    binding: str(ctx.flags, 'binding'),
    all: ctx.flags.all === true,
    by: str(ctx.flags, 'by'),
    group: ctx.flags.group === true,
    since: str(ctx.flags, 'since'),
  };
  const cfg = await hostConfig(ctx);
  return group === 'approvals'
    ? approvalsCommand(cfg, verb as 'list' | 'approve' | 'deny' | 'stats', ctx.args, flags, ctx.out, ctx.err)
    : grantsCommand(cfg, verb as 'list' | 'revoke', ctx.args, flags, ctx.out, ctx.err);
}

/** `paddock runs …|sessions show` through commands/state.ts. */
async function state(ctx: CommandContext, words: string[]): Promise<number> {
  const { stateCommand } = await import('./commands/state.js');
  return stateCommand(
    await hostConfig(ctx),
    [...words, ...ctx.args],
    {
      json: ctx.flags.json === true,
      status: str(ctx.flags, 'status'),
      as: str(ctx.flags, 'as'),
      by: str(ctx.flags, 'by'),
    },
    ctx.out,
    ctx.err,
  );
}

/** Every command, in the order `paddock --help` lists them. */
export const COMMANDS: CommandSpec[] = [
  {
    words: ['demo'],
    summary: 'a sample chat event through the real Claude Code CLI on the scripted model (offline, no key)',
    details: [
      'Adds the model `demo-scripted` and the binding `demo` to the data folder, then dispatches one event to it.',
    ],
    options: { json, 'keep-workspace': keepWorkspace, 'runner-dir': runnerDir },
    exitCodes: [...RUN_EXIT_CODES, '1 also when the Claude Code CLI is not installed'],
    async run(ctx) {
      startMachineProbe();
      const cfg = await hostConfig(ctx);
      if (!ctx.flags.json) ctx.out(`paddock demo — data folder ${cfg.dataDir}`);
      return (await import('./commands/demo.js')).demoCommand(cfg, await renderer(ctx.flags));
    },
  },
  {
    words: ['run'],
    summary: 'one event through a runner (a folder with runner.json, or a runner name), streamed',
    details: [
      'An ad-hoc run: no binding, no grants; the runner gets only its config. `paddock runs cancel` stops it ' +
        'from another shell.',
    ],
    options: {
      runner: {
        type: 'string',
        value: '<dir|name>',
        help: 'the runner: a folder with runner.json, or a built-in or configured name',
        required: true,
      },
      text: { type: 'string', value: '<message>', help: 'the chat message', required: true },
      conversation: {
        type: 'string',
        value: '<id>',
        help: 'private conversation id: runs with the same id share a session',
      },
      config: {
        type: 'string',
        value: '<json>',
        help: "the runner's config, a JSON object (checked against its configSchema)",
      },
      timeout,
      sandbox: { type: 'string', value: 'process|bwrap', help: 'isolation backend (default: process)' },
      'allow-degrade': {
        type: 'boolean',
        help:
          'run with what this machine can enforce when the backend or a limit is missing (audited), like a ' +
          "binding's allowDegrade; refused by default",
      },
      'keep-workspace': keepWorkspace,
      'runner-dir': runnerDir,
      json,
    },
    exitCodes: RUN_EXIT_CODES,
    async run(ctx) {
      const runner = str(ctx.flags, 'runner');
      const text = str(ctx.flags, 'text');
      const sandbox = str(ctx.flags, 'sandbox');
      if (!runner) throw new UsageError('run needs --runner <dir|name>', this);
      if (text === undefined) throw new UsageError('run needs --text <message>', this);
      if (sandbox !== undefined && sandbox !== 'process' && sandbox !== 'bwrap')
        throw new UsageError(`--sandbox must be process or bwrap, got ${JSON.stringify(sandbox.slice(0, 40))}`, this);
      startMachineProbe();
      const { parseJsonObjectFlag } = await import('./hostFlags.js');
      const runnerConfig = parseJsonObjectFlag('--config', str(ctx.flags, 'config'));
      const cfg = await hostConfig(ctx);
      const { textEvent } = await import('../../sdk/protocol/runParams.js');
      const conversation = str(ctx.flags, 'conversation');
      const event = textEvent(text, conversation ? { conversation: { type: 'private', id: conversation } } : {});
      const { runCommand } = await import('./commands/run.js');
      return runCommand({
        config: cfg,
        runner,
        event,
        runnerConfig,
        renderer: await renderer(ctx.flags),
        sandbox,
        allowDegrade: ctx.flags['allow-degrade'] === true,
      });
    },
  },
  {
    words: ['dispatch'],
    summary: 'a platform event (JSON) through the binding its route selects, streamed',
    options: {
      file: { ...file, help: 'the event, a JSON file (- reads stdin)', required: true },
      tenant: {
        type: 'string',
        value: '<tenant>',
        help: "dispatch for this tenant: only its bindings route the event (default: default, the operator's)",
      },
      json,
      timeout,
      'keep-workspace': keepWorkspace,
      'runner-dir': runnerDir,
    },
    exitCodes: [
      ...RUN_EXIT_CODES,
      '0 also for a duplicate delivery (nothing started), 6 refused (no binding, disabled, queue full, …)',
    ],
    async run(ctx) {
      const f = str(ctx.flags, 'file');
      if (!f) throw new UsageError('dispatch needs -f <event.json> (or -f - for stdin)', this);
      const tenant = str(ctx.flags, 'tenant');
      if (tenant !== undefined && !(await import('../config/tenant.js')).isTenant(tenant))
        throw new UsageError(
          `--tenant ${JSON.stringify(tenant)} is not a tenant name ([a-z0-9][a-z0-9_-]{0,62})`,
          this,
        );
      startMachineProbe();
      return (await import('./commands/dispatch.js')).dispatchCommand(
        await hostConfig(ctx),
        f,
        await renderer(ctx.flags),
        tenant,
      );
    },
  },
  {
    words: ['runners', 'list'],
    summary: 'runners found (built-in, $PADDOCK_RUNNER_DIRS, --runner-dir); broken ones on stderr',
    options: { json, 'runner-dir': runnerDir },
    async run(ctx) {
      return (await import('./commands/admin.js')).runnersCommand(
        await hostConfig(ctx),
        'list',
        undefined,
        adminFlags(ctx.flags),
        ctx.out,
        ctx.err,
      );
    },
  },
  {
    words: ['runners', 'show'],
    args: ['id'],
    summary: "a runner's manifest: what it asks for, its limits and config schema",
    options: { json, 'runner-dir': runnerDir },
    async run(ctx) {
      return (await import('./commands/admin.js')).runnersCommand(
        await hostConfig(ctx),
        'show',
        ctx.args[0],
        adminFlags(ctx.flags),
        ctx.out,
        ctx.err,
      );
    },
  },
  {
    words: ['runners', 'install'],
    args: ['spec'],
    summary:
      'install a runner package (npm spec, folder or tarball) with no script run, after reviewing what it asks for',
    details: [
      'npm fetches and unpacks it with --ignore-scripts; its tree, runner.json and package.json are checked; what it',
      'asks for (host requests, resource kinds, effects, env names, default limits, risk) is printed and needs',
      '--accept (or a yes on a terminal). It is kept read-only in <data>/runners/<id>@<version>/ with its digest,',
      'checked before each of its runs. A registry package has its signatures checked with `npm audit signatures`.',
    ],
    options: {
      accept: { type: 'boolean', help: 'accept the permissions it asks for (needed for a new runner or a widening)' },
      'allow-native-build': {
        type: 'boolean',
        help: "run the package's install scripts when its manifest asks for a native build (audited)",
      },
      progress: { type: 'boolean', help: 'name each step on stderr as it starts, even in the first second' },
      json,
      by,
    },
    exitCodes: ['0 installed (or already installed with the same digest)', '2 refused (the reason is named), or usage'],
    async run(ctx) {
      return (await import('./commands/runnerPackages.js')).installCommand(
        await hostConfig(ctx),
        'install',
        ctx.args,
        packageFlags(ctx.flags),
        ctx.out,
        ctx.err,
      );
    },
  },
  {
    words: ['runners', 'update'],
    args: ['id', 'spec?'],
    summary: 'install a newer version beside the installed ones; shows the permissions diff, a widening needs --accept',
    details: [
      'Without a spec: the registry latest of the same package, or the same folder or tarball read again.',
      'Bindings naming the bare id run the newest version; bindings pinned to <id>@<version> keep theirs.',
    ],
    options: {
      accept: { type: 'boolean', help: 'accept what the new version asks for beyond the installed one' },
      'allow-native-build': {
        type: 'boolean',
        help: "run the package's install scripts when its manifest asks for a native build (audited)",
      },
      progress: { type: 'boolean', help: 'name each step on stderr as it starts, even in the first second' },
      json,
      by,
    },
    exitCodes: ['0 installed (or already installed with the same digest)', '2 refused (the reason is named), or usage'],
    async run(ctx) {
      return (await import('./commands/runnerPackages.js')).installCommand(
        await hostConfig(ctx),
        'update',
        ctx.args,
        packageFlags(ctx.flags),
        ctx.out,
        ctx.err,
      );
    },
  },
  {
    words: ['runners', 'remove'],
    args: ['ref'],
    summary: 'remove an installed runner package version (<id>@<version>); refused while a binding uses it',
    options: {
      'disable-bindings': { type: 'boolean', help: 'disable the bindings that use it (audited), then remove it' },
      json,
      by,
    },
    exitCodes: ['0 removed', '2 refused (in use: the bindings are named), not installed, or usage'],
    async run(ctx) {
      return (await import('./commands/runnerPackages.js')).removeCommand(
        await hostConfig(ctx),
        ctx.args[0]!,
        packageFlags(ctx.flags),
        ctx.out,
      );
    },
  },
  {
    words: ['runners', 'verify'],
    args: ['ref?'],
    summary: 're-hash every file of the installed runner packages (or of one) against their recorded digests',
    options: { json, by },
    exitCodes: ['0 every version is as installed', '1 a version changed (marked tampered, audited)', '2 usage'],
    async run(ctx) {
      return (await import('./commands/runnerPackages.js')).verifyCommand(
        await hostConfig(ctx),
        ctx.args[0],
        packageFlags(ctx.flags),
        ctx.out,
      );
    },
  },
  {
    words: ['runners', 'test'],
    args: ['dir'],
    summary: 'run the conformance suite against a runner folder (any language): reads runner.json, starts its entry',
    details: [
      'Each check starts a fresh runner process the way the host does (entry.command + args, or a node entry),',
      "with the host's runner environment (PATH, locale, HOME, TMPDIR, PADDOCK_RUN_ID, the manifest's env).",
      'The runner runs as you, WITHOUT a sandbox or limits: test only runner code you trust (your own).',
      'The cancel check needs a run that takes a second or more: give it with --slow-text/--slow-config.',
    ],
    options: {
      text: { type: 'string', value: '<message>', help: 'message of the sample run (default "hello")' },
      config: { type: 'string', value: '<json>', help: 'runner config of the sample run (default {})' },
      'slow-text': {
        type: 'string',
        value: '<message>',
        help: 'message of the slow run cancelled mid-way (default: the sample one)',
      },
      'slow-config': {
        type: 'string',
        value: '<json>',
        help: 'runner config of the slow run (default: the sample one)',
      },
      'step-timeout': { type: 'string', value: '<ms>', help: 'longest any one step may take (default 10000)' },
      json: { type: 'boolean', help: 'the report as one JSON object: {runner, dir, passed, checks, failures}' },
    },
    exitCodes: [
      '0 every check passed',
      "1 a check failed (each failure named, with the runner's stderr)",
      '2 usage error, or no valid runner.json in <dir>',
    ],
    async run(ctx) {
      return (await import('./commands/runnersTest.js')).runnersTestCommand(ctx.args[0]!, ctx.flags, ctx.out);
    },
  },
  {
    words: ['apply'],
    summary: 'validate a configuration file, then store its resources and bindings in one transaction (audited)',
    options: {
      file: {
        ...file,
        value: '<paddock.yaml|->',
        help: 'the configuration (YAML or JSON; - reads stdin)',
        required: true,
      },
      prune: { type: 'boolean', help: 'delete stored bindings and resources the file does not name' },
      'dry-run': { type: 'boolean', help: 'validate and show the changes, write nothing' },
      by,
      json,
      'runner-dir': runnerDir,
    },
    async run(ctx) {
      return config(ctx, ['apply']);
    },
  },
  {
    words: ['export'],
    summary: 'the stored configuration as YAML (or JSON)',
    options: { json },
    async run(ctx) {
      return config(ctx, ['export']);
    },
  },
  {
    words: ['resources', 'list'],
    summary: 'stored resources (models, knowledge bases, MCP servers, mounts)',
    options: { json },
    async run(ctx) {
      return config(ctx, ['resources', 'list']);
    },
  },
  {
    words: ['bindings', 'list'],
    summary: 'stored bindings: enabled, version, runner, route',
    options: { json },
    async run(ctx) {
      return config(ctx, ['bindings', 'list']);
    },
  },
  {
    words: ['bindings', 'show'],
    args: ['id'],
    summary: "a binding's current spec and its change history",
    options: { json },
    async run(ctx) {
      return config(ctx, ['bindings', 'show']);
    },
  },
  {
    words: ['bindings', 'enable'],
    args: ['id'],
    summary: 'enable a binding (audited)',
    options: { by, json, 'runner-dir': runnerDir },
    async run(ctx) {
      return config(ctx, ['bindings', 'enable']);
    },
  },
  {
    words: ['bindings', 'disable'],
    args: ['id'],
    summary: 'disable a binding: new events are refused (audited)',
    options: { 'cancel-active': cancelActive, by, json, 'runner-dir': runnerDir },
    async run(ctx) {
      return config(ctx, ['bindings', 'disable']);
    },
  },
  {
    words: ['bindings', 'delete'],
    args: ['id'],
    summary: 'delete a binding (audited; its history stays)',
    options: { 'cancel-active': cancelActive, by, json },
    async run(ctx) {
      return config(ctx, ['bindings', 'delete']);
    },
  },
  {
    words: ['explain'],
    args: ['binding'],
    summary: 'what a run of this binding may touch, and what is not enforced',
    options: { json, timeout, 'runner-dir': runnerDir },
    async run(ctx) {
      return config(ctx, ['explain']);
    },
  },
  {
    words: ['doctor'],
    summary: 'which sandbox backends and limits work on this machine, and why not; harnesses; missing secrets',
    options: { json, timeout },
    exitCodes: ['0 always (read the report)', '2 usage error'],
    async run(ctx) {
      return (await import('./commands/doctor.js')).doctorCommand(
        await hostConfig(ctx),
        { json: ctx.flags.json === true },
        ctx.out,
      );
    },
  },
  {
    words: ['runs', 'list'],
    summary: 'runs, newest first',
    options: {
      status: {
        type: 'string',
        value: '<s1,s2>',
        help: 'only runs with these statuses (queued, running, completed, failed, cancelled, …)',
      },
      json,
    },
    async run(ctx) {
      return state(ctx, ['runs', 'list']);
    },
  },
  {
    words: ['runs', 'show'],
    args: ['runId'],
    summary: 'a run and its events',
    options: { json },
    async run(ctx) {
      return state(ctx, ['runs', 'show']);
    },
  },
  {
    words: ['runs', 'resolve'],
    args: ['runId'],
    summary: 'decide the effects recovery could not (did the interrupted run send its message?)',
    options: {
      as: { type: 'string', value: 'succeeded|failed', help: 'what happened to the open effects', required: true },
      by,
      json,
    },
    async run(ctx) {
      return state(ctx, ['runs', 'resolve']);
    },
  },
  {
    words: ['tokens', 'create'],
    summary: 'create an API token for `paddock serve` (printed once; only its hash is kept)',
    details: [
      'The token acts for one tenant with one role: platform (dispatch, read and stream its sessions),',
      "approver (read; decide its tenant's approvals and revoke its grants: paddock approvals, docs/approvals.md),",
      'admin (everything for its tenant; host-wide reads for tenant "default"),',
      "viewer (read-only: what its tenant's admin reads, nothing that changes state; for the admin console).",
      'Plain output prints the token alone on stdout (what it is for goes to stderr), so it can be captured.',
    ],
    options: {
      tenant: { type: 'string', value: '<name>', help: 'the tenant it acts for ([a-z0-9][a-z0-9_-]{0,62})' },
      role: { type: 'string', value: '<role>', help: 'platform, approver, admin or viewer' },
      name: { type: 'string', value: '<text>', help: 'a label for listings (e.g. the platform it is for)' },
      expires: { type: 'string', value: '<30d|12h|90m|date>', help: 'when it stops working (default: never)' },
      by,
      json,
    },
    async run(ctx) {
      return tokens(ctx, 'create');
    },
  },
  {
    words: ['tokens', 'list'],
    summary: 'API tokens (never their secrets), newest first',
    options: { tenant: { type: 'string', value: '<name>', help: "only this tenant's tokens" }, json },
    async run(ctx) {
      return tokens(ctx, 'list');
    },
  },
  {
    words: ['tokens', 'revoke'],
    args: ['tokenId'],
    summary: 'revoke an API token: every server on this data folder refuses it from its next request (audited)',
    options: { by, json },
    async run(ctx) {
      return tokens(ctx, 'revoke');
    },
  },
  {
    words: ['approvals', 'list'],
    summary: 'approvals of every tenant, oldest first: what runs asked for and who decided (docs/approvals.md)',
    options: {
      status: {
        type: 'string',
        value: '<pending|approved|denied|expired|void>',
        help: 'only approvals in this status',
      },
      run: { type: 'string', value: '<runId>', help: "only this run's approvals" },
      json,
    },
    async run(ctx) {
      return approvals(ctx, 'approvals', 'list');
    },
  },
  {
    words: ['approvals', 'approve'],
    args: ['approvalId'],
    summary: 'approve a pending approval (audited); with --lifetime run|session|binding it leaves a grant',
    details: [
      "The grant is exactly the approval's effect and target, never wider; a lifetime longer than the run asked for",
      'is refused. Only a pending approval not past its expiry can be decided, by one decider (any process).',
    ],
    options: {
      lifetime: {
        type: 'string',
        value: '<once|run|session|binding>',
        help: 'how long the approval holds (default once: this action only, no grant)',
      },
      reason: { type: 'string', value: '<text>', help: 'why, for the audit log' },
      group: { type: 'boolean', help: "also every other pending approval of its group (one run's low-risk asks)" },
      by,
      json,
    },
    exitCodes: [
      '0 approved',
      '1 not decided: the approval is not pending (its status and decider are said), expired, or wider than asked',
      '2 usage error, or no such approval',
    ],
    async run(ctx) {
      return approvals(ctx, 'approvals', 'approve');
    },
  },
  {
    words: ['approvals', 'deny'],
    args: ['approvalId'],
    summary: 'deny a pending approval: the run is told no (audited)',
    options: {
      reason: { type: 'string', value: '<text>', help: 'why, for the audit log' },
      group: { type: 'boolean', help: "also every other pending approval of its group (one run's low-risk asks)" },
      by,
      json,
    },
    exitCodes: [
      '0 denied',
      '1 not decided: the approval is not pending (its status and decider are said) or expired',
      '2 usage error, or no such approval',
    ],
    async run(ctx) {
      return approvals(ctx, 'approvals', 'deny');
    },
  },
  {
    words: ['approvals', 'stats'],
    summary: 'per binding: approvals asked, approved, denied, expired, void; policy and grant answers; revoked grants',
    details: [
      'Every tenant, from what the store recorded (every host process on this data folder). "Answered at once" counts',
      "actions the binding's rules, the host defaults and floors, or a capability grant decided without asking anyone;",
      'a grant "revoked after use" allowed at least one action first. The median time to a decision is from the ask to',
      "a person's approve or deny. The same figures are paddock_approvals_total on /metrics (docs/http-api.md).",
    ],
    options: {
      binding: { type: 'string', value: '<id>', help: "only this binding's figures" },
      since: {
        type: 'string',
        value: '<iso>',
        help: 'only what happened at or after this UTC instant (2026-01-31 or 2026-01-31T09:00:00Z)',
      },
      json,
    },
    async run(ctx) {
      return approvals(ctx, 'approvals', 'stats');
    },
  },
  {
    words: ['grants', 'list'],
    summary: 'capability grants approvals left behind, oldest first (live ones unless --all)',
    details: [
      "Not a binding's `grants:` (what its runs may use): these are what approvers granted (docs/approvals.md).",
    ],
    options: {
      binding: { type: 'string', value: '<id>', help: "only this binding's grants" },
      all: { type: 'boolean', help: 'also revoked, expired and used grants' },
      json,
    },
    async run(ctx) {
      return approvals(ctx, 'grants', 'list');
    },
  },
  {
    words: ['grants', 'revoke'],
    args: ['grantId'],
    summary: 'revoke a capability grant: the next action that would have used it asks again (audited)',
    options: { by, json },
    exitCodes: ['0 revoked', '1 it was already revoked (when and by whom is said)', '2 usage error, or no such grant'],
    async run(ctx) {
      return approvals(ctx, 'grants', 'revoke');
    },
  },
  {
    words: ['serve'],
    summary: 'the HTTP API for bot platforms, approvers and admins (docs/http-api.md), until SIGTERM/SIGINT',
    details: [
      'Every endpoint but /healthz, /readyz and /openapi.json needs an API token (paddock tokens create).',
      'Loopback by default; the server does not terminate TLS (put it behind a TLS proxy to expose it).',
      'Prints "paddock serve: listening on <url>" on stderr when ready. Stop: SIGTERM or SIGINT (a second one',
      'cancels the runs this process holds at once).',
    ],
    options: {
      listen: {
        type: 'string',
        value: '<host:port>',
        help: 'where to listen (default 127.0.0.1:8420; port 0 picks one)',
      },
      'on-stop': {
        type: 'string',
        value: '<drain|cancel>',
        help: "on stop, let this process's runs finish (drain, the default) or cancel them",
      },
      'drain-timeout': {
        type: 'string',
        value: '<ms>',
        help: 'how long a drain waits before cancelling what is left (default 30000)',
      },
      rate: { type: 'string', value: '<n>', help: 'requests per second per API token (default 20)' },
      burst: { type: 'string', value: '<n>', help: 'requests an API token may send at once (default 40)' },
      'max-streams-per-token': {
        type: 'string',
        value: '<n>',
        help: 'SSE streams one API token may hold open at once (default 16)',
      },
      'max-streams-per-tenant': {
        type: 'string',
        value: '<n>',
        help:
          "SSE streams one tenant's tokens may hold open at once (default: half of --max-streams, at least " +
          '--max-streams-per-token)',
      },
      'max-streams': { type: 'string', value: '<n>', help: 'SSE streams the server holds open at once (default 256)' },
      'max-queued-per-tenant': {
        type: 'string',
        value: '<n>',
        help: 'runs of one tenant waiting to start, on this data folder (default 64; more are refused queue_full)',
      },
      'webhook-allow': {
        type: 'string',
        value: '<host[:port],…>',
        help: 'where webhooks may be delivered: hosts, addresses, CIDRs (default loopback only)',
      },
      'api-host-config': {
        type: 'boolean',
        help:
          'let admin tokens of the "default" tenant create and change resources and bindings outside the ' +
          'sandbox, as paddock apply does (default: no API token may; keep such tokens like root)',
      },
      console: {
        type: 'boolean',
        help:
          'serve the admin web console at /console (docs/console.md): static files only, every action goes ' +
          'through this API with the token the person signs in with (default: no console)',
      },
      'runner-dir': runnerDir,
    },
    exitCodes: ['0 stopped by a signal', '2 usage error (e.g. a bad --listen)', '1 the address could not be bound'],
    async run(ctx) {
      const { DEFAULT_LISTEN, parseListen, parseRateFlag, serveCommand } = await import('./commands/serve.js');
      const { parsePositiveInt } = await import('./hostFlags.js');
      const onStop = str(ctx.flags, 'on-stop') ?? 'drain';
      if (onStop !== 'drain' && onStop !== 'cancel')
        throw new UsageError(`--on-stop must be drain or cancel, got ${JSON.stringify(onStop.slice(0, 40))}`);
      const drain = str(ctx.flags, 'drain-timeout');
      const perTenant = str(ctx.flags, 'max-streams-per-tenant');
      const queuedText = str(ctx.flags, 'max-queued-per-tenant');
      const queued = queuedText === undefined ? undefined : parseRateFlag('--max-queued-per-tenant', queuedText, 1);
      const options = {
        listen: parseListen(str(ctx.flags, 'listen') ?? DEFAULT_LISTEN),
        onStop: onStop as 'drain' | 'cancel',
        drainTimeoutMs: drain === undefined ? 30_000 : parsePositiveInt('--drain-timeout', drain),
        rate: {
          rate: parseRateFlag('--rate', str(ctx.flags, 'rate'), 20),
          burst: parseRateFlag('--burst', str(ctx.flags, 'burst'), 40),
        },
        streams: {
          perToken: parseRateFlag('--max-streams-per-token', str(ctx.flags, 'max-streams-per-token'), 16),
          // Absent: the quota's default (half of --max-streams, at least --max-streams-per-token).
          ...(perTenant !== undefined ? { perTenant: parseRateFlag('--max-streams-per-tenant', perTenant, 1) } : {}),
          total: parseRateFlag('--max-streams', str(ctx.flags, 'max-streams'), 256),
        },
        webhookAllow: str(ctx.flags, 'webhook-allow'),
        hostConfig: ctx.flags['api-host-config'] === true,
        console: ctx.flags.console === true,
      };
      const config = await hostConfig(ctx);
      if (queued !== undefined) config.maxQueuedRunsPerTenant = queued;
      return serveCommand(config, options, ctx.err);
    },
  },
  {
    words: ['runs', 'cancel'],
    args: ['runId'],
    summary: 'cancel a queued or running run, whichever paddock process holds it (audited)',
    details: [
      'Writes a cancel request the host process holding the run acts on within a fraction of a second:',
      'a queued run never starts, a running one gets run/cancel and ends `cancelled` (or is killed after its grace).',
    ],
    options: {
      reason: {
        type: 'string',
        value: '<text>',
        help:
          'why: in the audit log, and the run\'s reason if it had not started (default "cancelled with paddock ' +
          'runs cancel")',
      },
      by,
      json,
    },
    exitCodes: [
      '0 cancel requested',
      '1 the run had already ended (nothing to cancel)',
      '2 usage error, or no such run',
    ],
    async run(ctx) {
      const { cancelRunCommand } = await import('./commands/cancel.js');
      return cancelRunCommand(
        await hostConfig(ctx),
        ctx.args[0]!,
        { json: ctx.flags.json === true, reason: str(ctx.flags, 'reason'), by: str(ctx.flags, 'by') },
        ctx.out,
        ctx.err,
      );
    },
  },
  {
    words: ['sessions', 'show'],
    args: ['sessionId'],
    summary: 'a session: transcript, resume pointers, open effects',
    options: { json },
    async run(ctx) {
      return state(ctx, ['sessions', 'show']);
    },
  },
  {
    words: ['audit', 'verify'],
    summary: 'check the audit chain and its signed checkpoints',
    options: {
      key: {
        type: 'string',
        multiple: true,
        value: '<pub.pem>',
        help:
          'a public key to check the signatures with; repeat for each host that signs (pinned: a checkpoint by ' +
          "another key fails). Default: the data folder's key, and the keys the chain introduces once a checkpoint " +
          'of a trusted key covers them',
      },
      json,
    },
    exitCodes: ['0 intact', '1 tampered (the first bad record is named)', '2 usage error, or no state database'],
    async run(ctx) {
      const cfg = await hostConfig(ctx);
      return (await import('./commands/audit.js')).auditCommand(
        cfg,
        'verify',
        { json: ctx.flags.json === true, keys: (ctx.flags.key as string[] | undefined) ?? [] },
        ctx.out,
      );
    },
  },
  {
    words: ['audit', 'export'],
    summary: 'the audit log as JSONL (one record per line)',
    options: {},
    async run(ctx) {
      const cfg = await hostConfig(ctx);
      return (await import('./commands/audit.js')).auditCommand(cfg, 'export', { json: false, keys: [] }, ctx.out);
    },
  },
  {
    words: ['version'],
    summary: "paddock's version",
    options: {},
    async run(ctx) {
      const { HOST_INFO } = await import('../config/hostConfig.js');
      ctx.out(HOST_INFO.version);
      return 0;
    },
  },
];

/** Groups whose bare word runs one subcommand (`paddock runners` = `paddock runners list`). */
export const GROUP_DEFAULTS: Record<string, string> = { runners: 'list', resources: 'list', bindings: 'list' };
