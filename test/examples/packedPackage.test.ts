import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { beforeAll, describe, expect, it } from 'vitest';
import { jsonLines } from '../helpers/cli.js';
import { repoPath } from '../helpers/fixtures.js';

// paddock as an outside project gets it: `npm pack` → `npm install <tarball>` in a temp folder that is not paddock's
// tree, with a plain tsconfig (no decorators, no paddock settings). examples/hello-runner is that project, as a
// runner author would start it; a library program (the root export, openHost) lives next to it.
//
// One shortcut, named: the project's copies of paddock's runtime dependencies are links to this repo's
// node_modules (same versions, `file:` specs), and npm runs offline with scripts off. Otherwise every run would
// fetch ~100 packages and compile better-sqlite3 from source (~80 s); paddock itself comes from the tarball.

// npm, tsc over zod's and node's types, a real run: minutes when the shared 2-core machine is loaded.
const SLOW = 600_000;
const pkg = JSON.parse(readFileSync(repoPath('package.json'), 'utf8')) as { dependencies: Record<string, string> };
const linkTo = (name: string) => `file:${repoPath(`node_modules/${name}`)}`;
/** The built-in runners (runners/<id>). */
const BUILTIN = ['acp', 'claude-code', 'codex', 'echo', 'local-agent'];
const PLAIN_TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    strict: true,
    types: ['node'],
    outDir: 'out',
  },
  include: ['*.ts'],
};

/** A library user's program: the root export only, compiled with the plain tsconfig and run with plain node. */
const LIBRARY_PROGRAM =
  `import { applyConfig, discoverRunners, openHost, parseLimits, TOKENS, type RunOutcome } from ` +
  `'paddock';

const dataDir = process.argv[2]!;
const host = await openHost({ dataDir, limits: parseLimits({}), ` +
  `runnerDirs: [], logLevel: 'silent', keepWorkspaces: false });
const redactor = ` +
  `host.container.resolve(TOKENS.Redactor);
const bindings = [{ id: 'outside', runner: 'echo', sandbox: 'bwrap', ` +
  `route: { platform: 'telegram', bot: 'outside' } }];
applyConfig(host.store, { bindings }, { catalog: ` +
  `discoverRunners([]), mountRoots: [], redactor }, { by: 'user:outside' });
const ticket = await ` +
  `host.container.resolve(TOKENS.Dispatcher).dispatch({
  id: 'evt-outside', type: 'message', platform: ` +
  `'telegram', bot: 'outside', conversation: { type: 'group', id: 'c1' },
  sender: { id: 'u1', name: 'Ada' }, ` +
  `message: { parts: [{ type: 'text', text: 'from outside' }] }, receivedAt: new Date().toISOString(),
});
if ` +
  `(ticket.status === 'duplicate') throw new Error('duplicate');
const outcome: RunOutcome = await ` +
  `ticket.done;
const row = host.store.run(ticket.runId);
console.log(JSON.stringify({ outcome, stored: ` +
  `row?.status, sessionEvents: row ? host.store.readEvents(row.sessionId).map((e) => e.type) : [] ` +
  `}));
host.store.close();
`;

let tmp: string;
let project: string;
let packed: { files: { path: string }[]; filename: string };
/** `tsc -p .` over the project: hello-runner's files and the library program, emitted to out/. */
let compiled: { exitCode?: number; stdout: string };
/** `tsc` over a wrong use of the runner's config type (check/wrong.ts), which must not compile. */
let wrong: { exitCode?: number; stdout: string };

/** tsc from the outside project's own node_modules. */
const tsc = (args: string[]) =>
  execa(process.execPath, [join(project, 'node_modules/typescript/bin/tsc'), ...args], { cwd: project, reject: false });

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'paddock-outside-'));
  // Like a project folder, not a private temp one: a bwrap run's unprivileged uid must reach the installed package
  // (`paddock doctor` reports the same need for a clone).
  chmodSync(tmp, 0o755);
  const pack = await execa('npm', ['pack', '--json', '--pack-destination', tmp], { cwd: repoPath('.') });
  packed = (JSON.parse(pack.stdout) as (typeof packed)[])[0]!;
  project = join(tmp, 'hello-runner');
  cpSync(repoPath('examples/hello-runner'), project, { recursive: true });
  const dependencies = Object.fromEntries(Object.keys(pkg.dependencies).map((name) => [name, linkTo(name)]));
  const devDependencies = { typescript: linkTo('typescript'), '@types/node': linkTo('@types/node') };
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: 'hello-runner', private: true, type: 'module', dependencies, devDependencies }),
  );
  writeFileSync(join(project, 'tsconfig.json'), JSON.stringify(PLAIN_TSCONFIG));
  const install = await execa(
    'npm',
    ['install', join(tmp, packed.filename), '--offline', '--ignore-scripts', '--no-audit', '--no-fund'],
    {
      cwd: project,
      reject: false,
    },
  );
  expect(install.exitCode, install.stderr).toBe(0);
  writeFileSync(join(project, 'host.ts'), LIBRARY_PROGRAM);
  // The SDK's types are real, not `any`: a config that breaks the runner's own zod schema does not compile. The wrong
  // use sits in check/, out of the project's `include` (top-level *.ts), with its own tsconfig, so both programs are
  // checked at once on the two cores (each tsc is single-threaded) instead of one after the other.
  mkdirSync(join(project, 'check'));
  writeFileSync(
    join(project, 'check/wrong.ts'),
    "import { helloRunner } from '../runner.js';\nconst pause: string = " +
      'helloRunner.configSchema!.parse({}).pauseMs;\nexport { pause };\n',
  );
  writeFileSync(
    join(project, 'tsconfig.wrong.json'),
    // paddock's .d.ts are checked in full by the project's own compile
    JSON.stringify({
      extends: './tsconfig.json',
      compilerOptions: { noEmit: true, skipLibCheck: true },
      include: ['check/wrong.ts'],
    }),
  );
  [compiled, wrong] = await Promise.all([tsc(['-p', '.']), tsc(['-p', 'tsconfig.wrong.json'])]);
  // the runner folder is then run as a runner (`--runner .`): nothing of the check stays in it
  rmSync(join(project, 'check'), { recursive: true });
  rmSync(join(project, 'tsconfig.wrong.json'));
}, SLOW);

describe('the packed package, installed into an outside project', () => {
  it('ships the build, the SDK sources and the runners; no host sources, no tests, no tsx', () => {
    const files = packed.files.map((f) => f.path);
    for (const shipped of [
      'bin/paddock.js',
      'dist/host/index.js',
      'dist/host/index.d.ts',
      'dist/sdk/index.d.ts',
      'dist/sdk/testing/index.d.ts',
      'sdk/index.ts', // runner entries are bundled from the SDK sources at run time (host/plugins/compileEntry.ts)
      'runners/echo/runner.json',
      'host/state/migrations/0001_init.sql',
    ]) {
      expect(files).toContain(shipped);
    }
    expect(
      files.filter(
        (f) => f.startsWith('test/') || f.endsWith('.test.ts') || (f.startsWith('host/') && f.endsWith('.ts')),
      ),
    ).toEqual([]);
    const installed = JSON.parse(readFileSync(join(project, 'node_modules/paddock/package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    expect(Object.keys(installed.dependencies)).not.toContain('tsx');
    expect(existsSync(join(project, 'node_modules/tsx'))).toBe(false);
  });

  it("the installed package's built-in runners are the trees its build recorded (runner-digests.json)", async () => {
    const module = join(project, 'node_modules/paddock/dist/host/packages/builtinDigests.js');
    const program =
      `const { verifyBuiltinRunner } = await import(${JSON.stringify(module)});\n` +
      `console.log(JSON.stringify(${JSON.stringify(BUILTIN)}.map((id) => verifyBuiltinRunner(id))));`;
    const r = await execa(process.execPath, ['--input-type=module', '-e', program], { cwd: project, reject: false });
    expect(r.exitCode, r.stderr).toBe(0);
    const checks = JSON.parse(r.stdout) as { runner: string; ok: boolean; changed: string[] }[];
    expect(checks.map(({ runner, ok, changed }) => ({ runner, ok, changed }))).toEqual(
      BUILTIN.map((runner) => ({ runner, ok: true, changed: [] })),
    );
  });

  it(
    'a runner author type-checks examples/hello-runner against the installed SDK, and a wrong use fails',
    async () => {
      expect(compiled.exitCode, compiled.stdout).toBe(0);
      expect(existsSync(join(project, 'out/index.js'))).toBe(true);
      expect(existsSync(join(project, 'out/wrong.js')) || existsSync(join(project, 'out/check'))).toBe(false);
      // the wrong use, compiled in beforeAll next to the project's own compile
      expect(wrong.exitCode).not.toBe(0);
      expect(wrong.stdout).toMatch(
        /check\/wrong\.ts\(2,7\): error TS2322: Type 'number' is not assignable to type 'string'/,
      );
    },
    SLOW,
  );

  it(
    "the runner runs through the installed package's `paddock` bin",
    async () => {
      const r = await execa(
        join(project, 'node_modules/.bin/paddock'),
        ['run', '--runner', '.', '--text', 'Ada', '--json'],
        {
          cwd: project,
          reject: false,
          env: { PADDOCK_HOME: mkdtempSync(join(tmpdir(), 'paddock-outside-data-')), NO_COLOR: '1' },
        },
      );
      expect(r.exitCode, r.stderr).toBe(0);
      const text = jsonLines(r.stdout)
        .filter((l) => l.type === 'update')
        .map((l) => (l.update as { text?: string }).text ?? '')
        .join('');
      expect(text).toBe('Hello, Ada! Nice to meet you.');
    },
    SLOW,
  );

  it(
    "a library program imports { openHost } from 'paddock', type-checks without decorators, and dispatches to echo",
    async () => {
      expect(compiled.exitCode, compiled.stdout).toBe(0);
      const r = await execa(
        process.execPath,
        [join(project, 'out/host.js'), mkdtempSync(join(tmpdir(), 'paddock-outside-lib-'))],
        { cwd: project, reject: false },
      );
      expect(r.exitCode, r.stderr).toBe(0);
      const report = JSON.parse(r.stdout) as {
        outcome: { status: string; result?: { output?: unknown } };
        stored: string;
        sessionEvents: string[];
      };
      expect(report.outcome.status, JSON.stringify(report.outcome)).toBe('completed');
      expect(report.outcome.result?.output).toEqual({ parts: [{ type: 'text', text: 'from outside' }] });
      expect(report.stored).toBe('completed');
      expect(report.sessionEvents.length).toBeGreaterThan(0);
    },
    SLOW,
  );
});
