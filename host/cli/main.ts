import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { resolveDataDir } from '../config/dataDir.js';
import { HOST_INFO, type HostConfig } from '../config/hostConfig.js';
import { parseLimits } from '../config/limits.js';
import { HostError } from '../errors.js';
import { textEvent } from '../../sdk/protocol/runParams.js';
import { configCommand, runnersCommand } from './commands/admin.js';
import { auditCommand } from './commands/audit.js';
import { demoCommand } from './commands/demo.js';
import { dispatchCommand } from './commands/dispatch.js';
import { doctorCommand } from './commands/doctor.js';
import { runCommand } from './commands/run.js';
import { stateCommand } from './commands/state.js';
import { humanRenderer, jsonRenderer } from './render.js';

const USAGE = `paddock ${HOST_INFO.version} — agent-runner host

Usage:
  paddock demo [--json]                       a sample chat event through the real Claude Code CLI on the scripted model
  paddock run --runner <dir|name> --text <t>  one event through a runner, streamed
        [--json] [--config <json>] [--conversation <id>] [--timeout <ms>] [--sandbox process|bwrap] [--data-dir <dir>] [--keep-workspace]
  paddock dispatch -f <event.json|->          a platform event through the binding its route selects, streamed
  paddock runners list|show <id> [--json]     runners found (built-in, PADDOCK_RUNNER_DIRS, --runner-dir)
  paddock apply -f <paddock.yaml|-> [--prune] [--dry-run]
                                              validate, then store resources and bindings (audited)
  paddock export [--json]                     the stored configuration as YAML
  paddock resources list [--json]
  paddock bindings list|show <id> [--json]
  paddock bindings enable|disable|delete <id> [--cancel-active]
  paddock explain <binding> [--json]          what a run of this binding may touch, and what is not enforced
  paddock doctor [--json]                     which sandbox backends and limits work on this machine, and why not
  paddock runs list [--status s1,s2] [--json]  runs, newest first
  paddock runs show <runId> [--json]          a run and its events
  paddock runs resolve <runId> --as succeeded|failed [--by name]
                                              decide effects recovery could not
  paddock sessions show <sessionId> [--json]  transcript, pointers, open effects
  paddock audit verify [--key pub.pem] [--json]   check the audit chain (exit 1 if tampered)
  paddock audit export                        the audit log as JSONL
  paddock version

Exit codes: 0 completed, 1 failed, 2 usage error, 3 quota_exceeded, 4 crashed,
            5 protocol_error, 6 dispatch refused, 124 timed_out, 130 cancelled.
Every command also takes --data-dir <dir> and --durability normal|full (SQLite: full also survives power loss).
Environment: PADDOCK_HOME (data folder, default ./.paddock), PADDOCK_DURABILITY, PADDOCK_LOG_LEVEL (default warn),
  PADDOCK_RUNNER_DIRS and PADDOCK_MOUNT_ROOTS (colon-separated folders).`;


/** What an embedder (a test entry) adds to the configuration the command line builds. */
export type MainOptions = Pick<HostConfig, 'storeHooks'>;

/** The `paddock` command. Returns the exit code. */
export async function main(argv: string[], options: MainOptions = {}): Promise<number> {
  const [command, ...rest] = argv;
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      status: { type: 'string' },
      as: { type: 'string' },
      by: { type: 'string' },
      key: { type: 'string' },
      runner: { type: 'string' },
      text: { type: 'string' },
      conversation: { type: 'string' },
      json: { type: 'boolean', default: false },
      config: { type: 'string' },
      timeout: { type: 'string' },
      'data-dir': { type: 'string' },
      durability: { type: 'string' },
      'keep-workspace': { type: 'boolean', default: false },
      file: { type: 'string', short: 'f' },
      prune: { type: 'boolean', default: false },
      'dry-run': { type: 'boolean', default: false },
      'cancel-active': { type: 'boolean', default: false },
      'runner-dir': { type: 'string', multiple: true },
      sandbox: { type: 'string' },
    },
    strict: true,
  });
  const renderer = values.json ? jsonRenderer() : humanRenderer();
  const config: HostConfig = {
    dataDir: resolveDataDir(values['data-dir']),
    limits: parseLimits(values.timeout ? { wallClockMs: parsePositiveInt('--timeout', values.timeout) } : {}),
    runnerDirs: [...pathList(process.env.PADDOCK_RUNNER_DIRS), ...(values['runner-dir'] ?? []).map((d) => resolve(d))],
    mountRoots: pathList(process.env.PADDOCK_MOUNT_ROOTS),
    logLevel: process.env.PADDOCK_LOG_LEVEL ?? 'warn',
    keepWorkspaces: values['keep-workspace'],
    durability: parseDurability(values.durability ?? process.env.PADDOCK_DURABILITY),
    ...options,
  };
  switch (command) {
    case 'demo':
      if (!values.json) {
        process.stdout.write(`paddock demo — data folder ${config.dataDir}\n`);
      }
      return demoCommand(config, renderer);
    case 'run': {
      if (!values.runner) throw new UsageError('run needs --runner <dir|name>');
      if (values.text === undefined) throw new UsageError('run needs --text <message>');
      const event = textEvent(values.text, values.conversation ? { conversation: { type: 'private', id: values.conversation } } : {});
      if (values.sandbox !== undefined && values.sandbox !== 'process' && values.sandbox !== 'bwrap') throw new UsageError(`--sandbox must be process or bwrap, got ${JSON.stringify(values.sandbox)}`);
      return runCommand({ config, runner: values.runner, event, runnerConfig: parseConfigFlag(values.config), renderer, sandbox: values.sandbox });
    }
    case 'dispatch':
      if (!values.file) throw new UsageError('dispatch needs -f <event.json> (or -f - for stdin)');
      return dispatchCommand(config, values.file, renderer);
    case 'runners':
      return runnersCommand(config, positionals[0], positionals[1], values, stdout, stderr);
    case 'apply':
    case 'export':
    case 'resources':
    case 'bindings':
    case 'explain':
      return configCommand(config, [command, ...positionals], values, stdout, stderr);
    case 'runs':
    case 'sessions':
      return stateCommand(config, [command, ...positionals], values, stdout, stderr);
    case 'audit':
      return auditCommand(config.dataDir, positionals[0], values, stdout);
    case 'doctor':
      return doctorCommand(config, values, stdout);
    case 'version':
      process.stdout.write(`${HOST_INFO.version}\n`);
      return 0;
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(`${USAGE}\n`);
      return 0;
    default:
      throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  }
}

class UsageError extends Error {}

const stdout = (text: string) => void process.stdout.write(`${text}\n`);
const stderr = (text: string) => void process.stderr.write(`${text}\n`);

/** Absolute folders from a colon-separated list (empty entries dropped). */
function pathList(text: string | undefined): string[] {
  return (text ?? '').split(':').filter(Boolean).map((d) => resolve(d));
}

function parseDurability(text: string | undefined): 'normal' | 'full' {
  if (text === undefined || text === 'normal' || text === 'full') return text ?? 'normal';
  throw new UsageError(`--durability (or PADDOCK_DURABILITY) must be normal or full, got ${JSON.stringify(text)}`);
}

function parsePositiveInt(flag: string, text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n <= 0) throw new UsageError(`${flag} must be a positive whole number of milliseconds, got ${JSON.stringify(text)}`);
  return n;
}

function parseConfigFlag(text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`--config is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new UsageError('--config must be a JSON object');
  return value as Record<string, unknown>;
}

/** Run `main` as the process: print usage and host errors plainly, set the exit code. */
export async function runMain(argv: string[], options: MainOptions = {}): Promise<void> {
  // A reader that went away (`paddock audit export | head`) ends the output, not the host with a stack trace.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw error;
  });
  try {
    process.exitCode = await main(argv, options);
  } catch (error) {
    if (error instanceof UsageError || (error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS'))) {
      process.stderr.write(`paddock: ${error.message}\n\n${USAGE}\n`);
      process.exitCode = 2;
    } else if (error instanceof HostError) {
      process.stderr.write(`paddock: ${error.message}\n`);
      process.exitCode = 2;
    } else throw error;
  }
}
