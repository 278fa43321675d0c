// `paddock <command> --help` for every command, per-command options (an option a command does not
// take is refused, naming it), and the lazy loading of command modules — all through the real bin.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { paddock } from '../helpers/cli.js';
import { REPO_ROOT, repoPath } from '../helpers/fixtures.js';

const home = mkdtempSync(join(tmpdir(), 'paddock-help-'));

/** The modules (file URLs, relative to the repo) a `paddock` call loads. */
async function modulesLoaded(args: string[]): Promise<{ exitCode: number | undefined; modules: string[] }> {
  const trace = join(mkdtempSync(join(tmpdir(), 'paddock-trace-')), 'modules.txt');
  const r = await execa(
    process.execPath,
    ['--import', repoPath('test/helpers/moduleTrace.mjs'), repoPath('bin/paddock.js'), ...args],
    {
      reject: false,
      cwd: repoPath('.'),
      env: { PADDOCK_HOME: home, PADDOCK_MODULE_TRACE: trace, NO_COLOR: '1' },
    },
  );
  const modules = [
    ...new Set(
      readFileSync(trace, 'utf8')
        .split('\n')
        .filter((u) => u.startsWith('file:')),
    ),
  ]
    .map((u) => relative(REPO_ROOT, fileURLToPath(u)))
    // The bin runs the CLI bundle: a loaded chunk stands for the modules bundled into it.
    .flatMap((m) => bundledModules(m))
    // dist/host/… is host/… (the same module, compiled).
    .map((m) => m.replace(/^dist\//, ''));
  return { exitCode: r.exitCode, modules: [...new Set(modules)] };
}

/** esbuild's metafile of the CLI bundle: which source modules each output chunk holds (scripts/build.mjs). */
function bundleMeta(): { outputs: Record<string, { inputs: Record<string, unknown> }> } {
  // Read when used: the build a call ran is the one on disk right after it.
  return JSON.parse(readFileSync(repoPath('dist/cli/meta.json'), 'utf8')) as never;
}

/** A repo-relative loaded file; a chunk of the CLI bundle (dist/cli/…) becomes the repo-relative modules it holds. */
function bundledModules(file: string): string[] {
  if (!file.startsWith('dist/cli/')) return [file];
  const output = bundleMeta().outputs[file.slice('dist/'.length)];
  if (!output) throw new Error(`${file} is not in dist/cli/meta.json: the bundle and its metafile disagree`);
  // Inputs are relative to dist/: host/cli/main.js, ../node_modules/zod/….
  return Object.keys(output.inputs).map((input) => relative(REPO_ROOT, join(repoPath('dist'), input)));
}

/** What a help or version call must never load: the store, the host's inner layers, schema and protocol libraries. */
const HEAVY = [
  /^host\/(state|runs|dispatch|gateway|sandbox|bindings|plugins|audit|recovery)\//,
  /^sdk\//,
  /node_modules\/(zod|better-sqlite3|@modelcontextprotocol|@agentclientprotocol|ajv|pino|tsyringe|yaml|esbuild)\//,
  /^host\/start\./,
];

/** Every command the top-level help lists: its words, the options its synopsis names, its summary. */
async function listedCommands(): Promise<{ words: string[]; options: string[]; summary: string }[]> {
  const lines = (await paddock(['--help'], { dataDir: home })).stdout.split('\n');
  return lines.flatMap((line, i) => {
    const m = line.match(/^ {2}paddock ((?:[a-z]+ ?)+)(.*)$/);
    if (!m) return [];
    return [
      {
        words: m[1]!.trim().split(' '),
        options: [...m[2]!.matchAll(/--([a-z-]+)|(?<=^|[ [])-([a-z])(?= )/g)].map((o) => o[1] ?? o[2]!),
        summary: lines[i + 1]!.trim(),
      },
    ];
  });
}

describe('paddock --help for every command', () => {
  it('each command and subcommand prints its usage, every option with its meaning, and exit codes', async () => {
    const commands = await listedCommands();
    expect(commands.map((c) => c.words.join(' '))).toEqual(
      expect.arrayContaining([
        'run',
        'dispatch',
        'runners test',
        'runs cancel',
        'runs list',
        'audit verify',
        'version',
      ]),
    );
    expect(commands.length).toBeGreaterThanOrEqual(24);
    for (const spec of commands) {
      for (const flag of ['--help', '-h']) {
        const r = await paddock([...spec.words, flag], { dataDir: home });
        const name = `paddock ${spec.words.join(' ')} ${flag}`;
        expect(r.exitCode, name).toBe(0);
        expect(r.stdout, name).toMatch(new RegExp(`^Usage: paddock ${spec.words.join(' ')}\\b`));
        expect(r.stdout, name).toContain(spec.summary);
        // Each option on a line of its own, with its meaning after it.
        for (const option of spec.options)
          expect(r.stdout, `${name}: ${option}`).toMatch(
            option.length === 1
              ? new RegExp(`\\n {2}-${option}, --[a-z-]+ \\S+ +\\S`)
              : new RegExp(`\\n +(-[a-z], )?--${option}\\b[^\\n]* {2,}\\S`),
          );
        expect(r.stdout, name).toContain('--data-dir <dir>');
        expect(r.stdout, name).toMatch(/\nExit codes:\n {2}0 /);
      }
    }
  }, 300_000);

  it(
    '`paddock help <command>` and a group word with --help show the same help; the top-level help lists every ' +
      'command',
    async () => {
      expect((await paddock(['help', 'runs', 'cancel'], { dataDir: home })).stdout).toBe(
        (await paddock(['runs', 'cancel', '--help'], { dataDir: home })).stdout,
      );
      const group = await paddock(['runs', '--help'], { dataDir: home });
      expect(group.exitCode).toBe(0);
      for (const verb of ['list', 'show', 'resolve', 'cancel']) expect(group.stdout).toContain(`paddock runs ${verb}`);
      const top = await paddock(['--help'], { dataDir: home });
      expect(top.stdout).toContain('`paddock <command> --help`');
    },
  );

  it(
    'an option a command does not take is a usage error naming the option and the command (exit 2, its help on ' +
      'stderr)',
    async () => {
      const cases: [string[], string][] = [
        [['runs', 'list', '--prune'], "Unknown option '--prune' for `paddock runs list`"],
        [['audit', 'export', '--json'], "Unknown option '--json' for `paddock audit export`"],
        [['version', '--runner', 'echo'], "Unknown option '--runner' for `paddock version`"],
        [['export', '--as', 'failed'], "Unknown option '--as' for `paddock export`"],
        [
          ['runners', 'test', 'runners/echo', '--sandbox', 'bwrap'],
          "Unknown option '--sandbox' for `paddock runners test`",
        ],
      ];
      for (const [args, message] of cases) {
        const r = await paddock(args, { dataDir: home });
        expect(r.exitCode, args.join(' ')).toBe(2);
        expect(r.stderr, args.join(' ')).toContain(`paddock: ${message}`);
        expect(r.stderr, args.join(' ')).toContain(
          `Usage: paddock ${args.slice(0, args[0] === 'version' || args[0] === 'export' ? 1 : 2).join(' ')}`,
        );
        expect(r.stdout).toBe('');
      }
      const missing = await paddock(['runs', 'cancel'], { dataDir: home });
      expect([missing.exitCode, missing.stderr.split('\n')[0]]).toEqual([
        2,
        'paddock: `paddock runs cancel` needs <runId>',
      ]);
      const extra = await paddock(['runs', 'show', 'run_a', 'run_b'], { dataDir: home });
      expect([extra.exitCode, extra.stderr.split('\n')[0]]).toEqual([
        2,
        'paddock: unexpected argument "run_b" for `paddock runs show`',
      ]);
      const unknownVerb = await paddock(['runs', 'frobnicate'], { dataDir: home });
      expect([unknownVerb.exitCode, unknownVerb.stderr.split('\n')[0]]).toEqual([
        2,
        'paddock: unknown command: paddock runs frobnicate',
      ]);
      const unknown = await paddock(['frobnicate'], { dataDir: home });
      expect([unknown.exitCode, unknown.stderr.split('\n')[0]]).toEqual([2, 'paddock: unknown command "frobnicate"']);
    },
  );

  it(
    'the bare group words keep their old meaning: `paddock runners` lists runners, `paddock bindings --json` ' +
      'lists bindings',
    async () => {
      const runners = await paddock(['runners'], { dataDir: home });
      expect(runners.exitCode).toBe(0);
      expect(runners.stdout).toMatch(/^acp .*\n(.*\n)*echo /m);
      const bindings = await paddock(['bindings', '--json'], { dataDir: home });
      expect([bindings.exitCode, bindings.stdout.trim()]).toEqual([0, '[]']);
    },
  );

  it('help and version load no command module (no store, zod, SQLite, MCP); runs list no service', async () => {
    for (const args of [
      ['--help'],
      ['version'],
      ['runs', '--help'],
      ['runs', 'cancel', '--help'],
      ['run', '--help'],
      ['runners', 'test', '-h'],
    ]) {
      const { exitCode, modules } = await modulesLoaded(args);
      expect(exitCode, args.join(' ')).toBe(0);
      const own = modules.filter((m) => !m.includes('node_modules/'));
      expect(
        own.filter((m) => HEAVY.some((h) => h.test(m))),
        args.join(' '),
      ).toEqual([]);
      // tsx (the bin running from sources) loads esbuild to transpile; the host itself must not.
      const viaTsx = modules.some((m) => m.includes('node_modules/tsx/'));
      expect(
        modules.filter((m) => HEAVY.some((h) => h.test(m)) && !(viaTsx && m.includes('node_modules/esbuild/'))),
        args.join(' '),
      ).toEqual([]);
      // bin, entry, main, the command table, spec, and the version (config/hostConfig, packageRoot), errors, and the
      // output escaper every printed line goes through (util/terminalText, no imports).
      expect(own.length, `${args.join(' ')}: ${own.join(', ')}`).toBeLessThanOrEqual(9);
    }
    // The trace sees a command's modules once it runs: the check above can fail.
    const { exitCode, modules } = await modulesLoaded(['runs', 'list', '--json']);
    expect(exitCode).toBe(0);
    expect(modules.some((m) => m.startsWith('host/state/'))).toBe(true);
    expect(modules.some((m) => m.includes('node_modules/better-sqlite3/'))).toBe(true);
    // A read command opens the host's state only (openHostState): no services, no gateway, no runner planning.
    const SERVICES = [
      /^host\/(gateway|dispatch|plugins|bindings)\//,
      // The start-up sweeps' own helpers: workspace names, warm slot ids (whose owner is alive), dead slots' cgroups.
      /^host\/runs\/(?!workspace\.|warmSlotId\.|deadSlots\.)/,
      /^host\/di\/configure\./,
      /node_modules\/(@modelcontextprotocol|@agentclientprotocol|ajv|yaml|execa|tsyringe|pino|esbuild)\//,
    ];
    expect(modules.filter((m) => SERVICES.some((s) => s.test(m)))).toEqual([]);
  }, 120_000);
});
