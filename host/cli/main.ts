// The `paddock` command: finds the command in the table, parses its own options, loads its module.
// Imports here stay light (no store, schemas, SDKs): every call pays for them before argv is read.
import { HOST_INFO } from '../config/hostConfig.js';
import { HostError } from '../errors.js';
import { terminalSafe } from '../util/terminalText.js';
import { COMMANDS, GROUP_DEFAULTS } from './commandTable.js';
import {
  checkArgs,
  commandHelp,
  groupHelp,
  parseCommandArgs,
  synopsis,
  UsageError,
  type CommandContext,
  type CommandSpec,
} from './spec.js';

/** The top-level help: every command's synopsis and summary. */
function usage(): string {
  return [
    `paddock ${HOST_INFO.version} — agent-runner host`,
    '',
    'Usage:',
    ...COMMANDS.map((c) => `  ${synopsis(c)}\n      ${c.summary}`),
    '',
    '`paddock <command> --help` (or -h) shows one command: its options, what they mean, its exit codes.',
    'Exit codes: 0 completed, 1 failed, 2 usage error, 3 quota_exceeded, 4 crashed,',
    '            5 protocol_error, 6 dispatch refused, 124 timed_out, 130 cancelled.',
    'Every command also takes --data-dir <dir> and --durability normal|full (SQLite: full also survives power loss),',
    '  and --database-url <url> (a PostgreSQL store; no password on the command line).',
    'Environment: PADDOCK_HOME (data folder, default ./.paddock), PADDOCK_DURABILITY, PADDOCK_LOG_LEVEL ' +
      '(default warn),',
    '  PADDOCK_RUNNER_DIRS and PADDOCK_MOUNT_ROOTS (colon-separated folders), PADDOCK_DATABASE_URL (PostgreSQL),',
    "  PADDOCK_LEASE_MS (a host's lease on a PostgreSQL store, default 15000).",
  ].join('\n');
}

type Found = { spec: CommandSpec; rest: string[] } | { group: string; specs: CommandSpec[]; rest: string[] };

/** The command `argv` names (words first), or the group when only its word is given. */
function findCommand(argv: string[]): Found | undefined {
  const [first, second, ...after] = argv;
  const single = COMMANDS.find((c) => c.words.length === 1 && c.words[0] === first);
  if (single) return { spec: single, rest: argv.slice(1) };
  const group = COMMANDS.filter((c) => c.words.length === 2 && c.words[0] === first);
  if (group.length === 0) return undefined;
  const sub = group.find((c) => c.words[1] === second);
  if (sub) return { spec: sub, rest: after };
  const fallback = GROUP_DEFAULTS[first!];
  // `paddock runners` and `paddock runners --json` mean `runners list`; `paddock runs --help` is the group's help.
  const wantsHelp = second === '--help' || second === '-h';
  if (fallback && !wantsHelp && (second === undefined || second.startsWith('-')))
    return { spec: group.find((c) => c.words[1] === fallback)!, rest: argv.slice(1) };
  return { group: first!, specs: group, rest: argv.slice(1) };
}

/** What an embedder (a test entry) adds to the configuration the command line builds. */
export type MainOptions = CommandContext['embed'];

/** The `paddock` command. Returns the exit code. */
export async function main(argv: string[], options: MainOptions = {}): Promise<number> {
  const [command, ...words] = argv;
  if (command === undefined || command === '--help' || command === '-h' || (command === 'help' && words.length === 0)) {
    stdout(usage());
    return 0;
  }
  if (command === 'help') return main([...words, '--help'], options);
  const found = findCommand(argv);
  if (!found) throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  if ('group' in found) {
    const [next] = found.rest;
    if (next === '--help' || next === '-h') {
      stdout(groupHelp(found.group, found.specs));
      return 0;
    }
    throw new UsageError(
      next === undefined || next.startsWith('-')
        ? `paddock ${found.group} needs a command`
        : `unknown command: paddock ${found.group} ${next}`,
      undefined,
      found,
    );
  }
  const { spec } = found;
  try {
    const { flags, args } = parseCommandArgs(spec, found.rest);
    if (flags.help) {
      stdout(commandHelp(spec));
      return 0;
    }
    checkArgs(spec, args);
    return await spec.run({ flags, args, out: stdout, err: stderr, embed: options });
  } catch (error) {
    if (error instanceof UsageError) error.command ??= spec;
    throw error;
  }
}

// The one choke point of the commands' output: what they print quotes untrusted text (manifest fields, runner
// output, paths and keys in error messages), so every control character is shown escaped, never acted on. No
// command colours through these writers; JSON stays exact JSON (terminalSafe escapes from DEL up as `\uXXXX`).
const stdout = (text: string) => void process.stdout.write(`${terminalSafe(text, true)}\n`);
const stderr = (text: string) => void process.stderr.write(`${terminalSafe(text, true)}\n`);

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
    if (error instanceof UsageError) {
      // The help of the command the user meant (the whole usage when no command was recognised).
      const help = error.command
        ? commandHelp(error.command)
        : error.group
          ? groupHelp(error.group.group, error.group.specs)
          : usage();
      process.stderr.write(`paddock: ${terminalSafe(error.message, true)}\n\n${help}\n`);
      process.exitCode = 2;
    } else if (error instanceof HostError) {
      // A HostError quotes what it refused (a manifest's keys and paths, a runner's message): untrusted bytes.
      process.stderr.write(`paddock: ${terminalSafe(error.message, true)}\n`);
      process.exitCode = 2;
    } else {
      // A bug of paddock's own: its stack, escaped too (the message may quote untrusted input), exit 1.
      const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
      process.stderr.write(`paddock: internal error: ${terminalSafe(text, true)}\n`);
      process.exitCode = 1;
    }
  }
}
