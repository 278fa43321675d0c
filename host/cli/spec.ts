import type { HostConfig } from '../config/hostConfig.js';
// What a CLI command declares (options, arguments, help) and the parsing every command shares.
// Nothing here may import a heavy module: `paddock --help` loads only this, the table and main.
import { parseArgs, type ParseArgsConfig } from 'node:util';

/** One option a command takes. */
export interface OptionSpec {
  type: 'string' | 'boolean';
  short?: string;
  multiple?: boolean;
  /** The value's placeholder in the help (`<dir>`, `normal|full`). */
  value?: string;
  /** What it means, one line. */
  help: string;
  /** The command cannot run without it (shown without brackets; the command checks it). */
  required?: boolean;
}

/** Parsed options of one command (values keyed by long name). */
export type Flags = Record<string, string | boolean | string[] | undefined>;

/** What a command's `run` gets. */
export interface CommandContext {
  flags: Flags;
  /** The positional arguments after the command words. */
  args: string[];
  out: (text: string) => void;
  err: (text: string) => void;
  /** What an embedder (a test entry) adds to the host configuration the flags make. */
  embed: Pick<HostConfig, 'storeHooks'>;
}

/** A command or subcommand (`runs cancel`). */
export interface CommandSpec {
  /** The words that name it: `['runs', 'cancel']`. */
  words: string[];
  /** Positional arguments after the words; a trailing `?` marks an optional one. */
  args?: string[];
  summary: string;
  /** More lines for `--help` (what it does, what it needs). */
  details?: string[];
  options: Record<string, OptionSpec>;
  /** Exit codes, when more than 0 (done) and 2 (usage error or unknown object). */
  exitCodes?: string[];
  run(ctx: CommandContext): Promise<number>;
}

/** A usage error: exit code 2 and the command's help. */
export class UsageError extends Error {
  constructor(
    message: string,
    /** The command it is about (its help is shown); set by main when the thrower did not know it. */
    public command?: CommandSpec,
    /** The group it is about, when no subcommand was recognised. */
    readonly group?: { group: string; specs: CommandSpec[] },
  ) {
    super(message);
  }
}

/** Options every command takes. */
export const GLOBAL_OPTIONS: Record<string, OptionSpec> = {
  'data-dir': { type: 'string', value: '<dir>', help: 'data folder (default: $PADDOCK_HOME, else ./.paddock)' },
  'database-url': {
    type: 'string',
    value: '<url>',
    help: 'PostgreSQL store instead of SQLite, no password in it (default $PADDOCK_DATABASE_URL; docs/scale-out.md)',
  },
  durability: {
    type: 'string',
    value: 'normal|full',
    help: 'SQLite durability: full also survives power loss (default $PADDOCK_DURABILITY, else normal)',
  },
  help: { type: 'boolean', short: 'h', help: 'show this help' },
};

/** `paddock runs cancel <runId> [--reason <text>] …`: the one-line synopsis. */
export function synopsis(spec: CommandSpec): string {
  const args = (spec.args ?? []).map((a) => (a.endsWith('?') ? `[<${a.slice(0, -1)}>]` : `<${a}>`));
  const options = Object.entries(spec.options).map(([name, o]) => {
    const flag = o.short ? `-${o.short}` : `--${name}`;
    const text = `${flag}${o.type === 'string' ? ` ${o.value ?? '<value>'}` : ''}`;
    return o.required ? text : `[${text}]`;
  });
  return ['paddock', ...spec.words, ...args, ...options].join(' ');
}

/** The full `--help` of a command. */
export function commandHelp(spec: CommandSpec): string {
  const optionLines = (options: Record<string, OptionSpec>) =>
    Object.entries(options).map(([name, o]) => {
      const flag =
        `${o.short ? `-${o.short}, ` : '    '}--${name}` + `${o.type === 'string' ? ` ${o.value ?? '<value>'}` : ''}`;
      // Two spaces at least between a flag and its meaning, also when the flag is wider than the column.
      const column = flag.length < 30 ? flag.padEnd(31) : `${flag}  `;
      return `  ${column}${o.help}${o.required ? ' (required)' : ''}${o.multiple ? ' (repeatable)' : ''}`;
    });
  return [
    `Usage: ${synopsis(spec)}`,
    '',
    spec.summary,
    ...(spec.details?.length ? ['', ...spec.details] : []),
    ...(Object.keys(spec.options).length ? ['', 'Options:', ...optionLines(spec.options)] : []),
    '',
    'Global options:',
    ...optionLines(GLOBAL_OPTIONS),
    '',
    'Exit codes:',
    ...(spec.exitCodes ?? ['0 done', '2 usage error, invalid input, or no such object']).map((l) => `  ${l}`),
  ].join('\n');
}

/** The help of a command group (`paddock runs --help`): its subcommands. */
export function groupHelp(word: string, specs: CommandSpec[]): string {
  return [
    `Usage: paddock ${word} <command> …`,
    '',
    'Commands:',
    ...specs.map((s) => `  ${synopsis(s)}\n      ${s.summary}`),
    '',
    `\`paddock ${word} <command> --help\` for one command's options.`,
  ].join('\n');
}

/**
 * Parse a command's own options (plus the global ones) strictly: an option the command does not
 * take is a usage error naming it and the command.
 */
export function parseCommandArgs(spec: CommandSpec, argv: string[]): { flags: Flags; args: string[] } {
  const options: ParseArgsConfig['options'] = {};
  for (const [name, o] of Object.entries({ ...GLOBAL_OPTIONS, ...spec.options })) {
    options[name] = { type: o.type, ...(o.short ? { short: o.short } : {}), ...(o.multiple ? { multiple: true } : {}) };
  }
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true, tokens: true });
  } catch (error) {
    if (error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS')) {
      // parseArgs says "Unknown option '--x'. To specify a positional argument…": keep the first sentence.
      throw new UsageError(
        `${error.message.split('. ')[0]!.replace(/\.$/, '')} for \`paddock ${spec.words.join(' ')}\``,
        spec,
      );
    }
    throw error;
  }
  checkOptionTokens(spec, parsed.tokens);
  return { flags: parsed.values as Flags, args: parsed.positionals };
}

/**
 * What parseArgs lets through but no command can use: an empty value (`--timeout ""` would
 * silently mean the default) and a single-valued option given twice (`--sandbox bwrap --sandbox
 * process` would silently keep the last, weaker one). Both are usage errors naming the option.
 */
function checkOptionTokens(spec: CommandSpec, tokens: { kind: string; name?: string; value?: string }[]): void {
  const all = { ...GLOBAL_OPTIONS, ...spec.options };
  const seen = new Set<string>();
  const where = `\`paddock ${spec.words.join(' ')}\``;
  for (const token of tokens) {
    if (token.kind !== 'option' || token.name === undefined) continue;
    const option = all[token.name];
    if (!option) continue;
    if (option.type === 'string' && token.value !== undefined && token.value.trim() === '')
      throw new UsageError(`--${token.name} needs a value, got an empty one, for ${where}`, spec);
    if (option.multiple) continue;
    if (seen.has(token.name))
      throw new UsageError(`--${token.name} is given more than once for ${where}; it takes one value`, spec);
    seen.add(token.name);
  }
}

/** Check the positional arguments against the spec: missing and extra ones are usage errors. */
export function checkArgs(spec: CommandSpec, args: string[]): void {
  const declared = spec.args ?? [];
  const required = declared.filter((a) => !a.endsWith('?'));
  const where = `\`paddock ${spec.words.join(' ')}\``;
  if (args.length < required.length) throw new UsageError(`${where} needs <${required[args.length]}>`, spec);
  if (args.length > declared.length)
    throw new UsageError(`unexpected argument ${JSON.stringify(args[declared.length])} for ${where}`, spec);
}
