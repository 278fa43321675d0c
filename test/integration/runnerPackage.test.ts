// A runner package (runner.json, entry, args, env, files) is untrusted input: it must never run
// code on the host outside its sandbox, make the sandbox bind a host path the admin did not grant,
// or read host files while its entry is built. Each attack runs under both backends where it applies.
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HostError } from '../../host/errors.js';
import { compileNodeEntry } from '../../host/plugins/compileEntry.js';
import type { RunOutcome } from '../../host/process/outcome.js';
import { spawnRunner } from '../../host/process/spawnRunner.js';
import { HOST_HELPER_ENV } from '../../host/sandbox/hostTools.js';
import { prepareSandbox, type Backend } from '../../host/sandbox/prepare.js';
import { probeMachine } from '../../host/sandbox/probe.js';
import { textEvent } from '../../sdk/protocol/runParams.js';
import { filesContaining } from '../helpers/canary.js';
import { repoPath } from '../helpers/fixtures.js';
import { chatEvent, FIXTURE_RUNNERS, tempHost } from '../helpers/host.js';
import { ConfigRepo } from '../../host/bindings/configRepo.js';
import { explainBinding, renderExplanation } from '../../host/bindings/explain.js';
import type { Binding } from '../../host/bindings/schema.js';
import { HARNESS_DIR } from '../../host/harness/harnesses.js';
import { discoverRunners } from '../../host/plugins/catalog.js';

const BACKENDS: Backend[] = ['process', 'bwrap'];
const machine = probeMachine();
const host = tempHost({ limits: { wallClockMs: 30_000 } });
afterAll(() => host.close());

/** Host helpers a planted PATH could shadow; each planted copy leaves a canary file when it runs. */
const HELPERS = [
  'sh',
  'bash',
  'dash',
  'prlimit',
  'bwrap',
  'env',
  'rm',
  'socat',
  'node',
  'cat',
  'echo',
  'grep',
  'sleep',
  'kill',
];

/**
 * A folder of executables named like the host helpers; each writes `<canaries>/<name>` and then does the real thing.
 */
function plantHelpers(): { dir: string; canaries: string } {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-plant-'));
  const canaries = mkdtempSync(join(tmpdir(), 'paddock-canaries-'));
  for (const name of HELPERS) {
    writeFileSync(join(dir, name), `#!/bin/sh\necho ran > ${canaries}/${name}\nexec /usr/bin/${name} "$@"\n`);
    chmodSync(join(dir, name), 0o755);
  }
  writeFileSync(join(dir, 'evil.sh'), `echo ran > ${canaries}/BASH_ENV\n`);
  chmodSync(dir, 0o755);
  return { dir, canaries };
}

/** Start a prepared launch, read what its runner printed, wait for its end. */
async function runLaunch(
  backend: Backend,
  env: Record<string, string>,
): Promise<{ stdout: string; stderr: string; code: number | null; launch: ReturnType<typeof prepareSandbox> }> {
  const runnerDir = mkdtempSync(join(tmpdir(), 'paddock-envrunner-'));
  writeFileSync(join(runnerDir, 'dump.mjs'), 'process.stdout.write(JSON.stringify(process.env));');
  chmodSync(runnerDir, 0o755);
  const workspace = mkdtempSync(join(tmpdir(), 'paddock-envws-'));
  // the run's host uid must reach its working folder (runService gives it the real workspace)
  chmodSync(workspace, 0o777);
  const prepared = prepareSandbox({
    backend,
    runId: `pkg-env-${process.pid}-${Date.now()}`,
    launch: { command: process.execPath, args: [join(runnerDir, 'dump.mjs')], cwd: workspace, env },
    workspace,
    readOnly: [runnerDir],
    binds: [],
    limits: {
      memoryBytes: 512 * 1024 * 1024,
      pids: 64,
      cpuSeconds: 10,
      fileSizeBytes: 1 << 20,
      openFiles: 256,
      diskBytes: 64 << 20,
      inodes: 10_000,
    },
  });
  const proc = await spawnRunner(prepared.launch);
  proc.stdin.end();
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  proc.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  // Its exit code once its output is all read (what `close` of a ChildProcess gave).
  const ended = (s: NodeJS.ReadableStream) => new Promise((resolve) => s.once('end', resolve));
  const exited = new Promise<number | null>((resolve) => proc.child.once('exit', (c: number | null) => resolve(c)));
  const [code] = await Promise.all([exited, ended(proc.stdout), ended(proc.stderr)]);
  await prepared.containment?.killAll(2_000);
  await prepared.containment?.release();
  return { stdout, stderr, code, launch: prepared };
}

describe('item 1: a runner environment never reaches a host-side helper', () => {
  it('this machine has what the attacks need (bwrap, prlimit, writable cgroups)', () => {
    expect(machine.bwrap, machine.bwrap.why).toMatchObject({ available: true });
    expect(machine.prlimit).toMatchObject({ available: true, path: expect.stringMatching(/^\//) });
    expect(machine.cgroups.pids, machine.cgroups.why).toBeTruthy();
  });

  it.each(BACKENDS)(
    '%s: a PATH, BASH_ENV, ENV and loader variables pointing at planted helpers run none of them; only the ' +
      'runner sees its environment',
    async (backend) => {
      const { dir, canaries } = plantHelpers();
      const token = `tok-${process.pid}-SECRET-${Date.now()}`;
      const env = {
        PATH: `${dir}:/usr/bin:/bin`,
        BASH_ENV: join(dir, 'evil.sh'),
        ENV: join(dir, 'evil.sh'),
        LD_LIBRARY_PATH: dir,
        PADDOCK_RUN_TOKEN: token,
        PADDOCK_RUNNER_MODE: 'a value with spaces\nand a newline',
      };
      const { stdout, stderr, code, launch } = await runLaunch(backend, env);
      expect(code, stderr).toBe(0);
      // Nothing planted ran on the host (under bwrap the plant is not even visible inside).
      expect(readdirSync(canaries)).toEqual([]);
      // The runner itself got exactly its environment, under both backends.
      const seen = JSON.parse(stdout) as Record<string, string>;
      for (const [k, v] of Object.entries(env)) expect(seen[k], k).toBe(v);
      // bwrap adds PWD (its --chdir); nothing else of anyone's environment is there.
      expect(
        Object.keys(seen)
          .filter((k) => !(backend === 'bwrap' && k === 'PWD'))
          .sort(),
      ).toEqual(Object.keys(env).sort());
      // The host-visible launch: an absolute helper, the host's fixed environment, no run token or env value in argv.
      expect(launch.launch.command).toMatch(/^\//);
      expect(launch.launch.env).toEqual(HOST_HELPER_ENV);
      const argv = JSON.stringify([launch.launch.command, ...launch.launch.args]);
      expect(argv).not.toContain(token);
      expect(argv).not.toContain('a value with spaces');
      expect(argv).not.toContain(dir);
      // Every helper word the launch execs is an absolute path.
      for (const word of ['prlimit', 'bwrap', 'bash', 'env', 'rm'])
        expect(
          launch.launch.args.filter((a) => a === word || a.endsWith(`/${word}`)).every((a) => a.startsWith('/')),
          word,
        ).toBe(true);
      // The launch file (the env or the bwrap options) is gone once the launch started.
      expect(launch.launch.args.filter((a) => a.includes('paddock-launch-')).filter((a) => existsSync(a))).toEqual([]);
    },
  );

  it.each(BACKENDS)(
    '%s: a manifest that sets env.PATH to its own folder is refused before anything starts, and its planted ' +
      'prlimit never runs',
    async (backend) => {
      const { dir, canaries } = plantHelpers();
      writeFileSync(
        join(dir, 'runner.json'),
        JSON.stringify({
          id: 'planted',
          name: 'planted',
          version: '1',
          protocolVersion: 1,
          entry: { command: join(dir, 'sh'), args: [] },
          env: { PATH: dir, LD_PRELOAD: join(dir, 'x.so'), NODE_OPTIONS: `--require ${join(dir, 'evil.js')}` },
        }),
      );
      const error = await host.runs
        .runAdHoc({ runner: dir, event: textEvent('hi'), sandbox: backend })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(HostError);
      expect((error as HostError).code).toBe('MANIFEST_INVALID');
      // Every refused name at once, each naming its field.
      for (const field of ['env.PATH', 'env.LD_PRELOAD', 'env.NODE_OPTIONS'])
        expect((error as Error).message).toContain(`field ${field}:`);
      expect(readdirSync(canaries)).toEqual([]);
    },
  );

  it.each(BACKENDS)(
    '%s: an allowed manifest variable (the runner namespace) reaches the runner, and nothing else of the manifest does',
    async (backend) => {
      const dir = attackerFolder({
        env: { PADDOCK_RUNNER_GREETING: 'hi from the manifest', PKG_ATTACKER_MODE: 'fast' },
      });
      const { outcome, results } = await attack(dir, ['env'], backend);
      expect(outcome.status, outcome.reason).toBe('completed');
      const env = JSON.parse(results.env!.slice(3)) as Record<string, string>;
      expect(env.PADDOCK_RUNNER_GREETING).toBe('hi from the manifest');
      expect(env.PKG_ATTACKER_MODE).toBe('fast');
      expect(env.PATH).toBe(process.env.PATH); // the host's PATH, never the manifest's
    },
  );
});

// ——— A third-party runner folder: the attacker fixture, bundled once, started through entry.command. ———

let attackerBundle: string;
beforeAll(async () => {
  attackerBundle = await compileNodeEntry(repoPath('test/fixtures/runnerDirs/tries-sandbox-escapes/index.ts'));
});

/** A runner folder outside the repo holding the attacker; `args` are extra words after its script. */
function attackerFolder(
  over: { args?: string[]; command?: string; env?: Record<string, string>; files?: (dir: string) => void } = {},
): string {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-thirdparty-'));
  chmodSync(dir, 0o755);
  copyFileSync(attackerBundle, join(dir, 'attacker.mjs'));
  writeFileSync(
    join(dir, 'runner.json'),
    JSON.stringify({
      id: 'pkg-attacker',
      name: 'third-party attacker',
      version: '1',
      protocolVersion: 1,
      entry: { command: over.command ?? process.execPath, args: ['{runnerDir}/attacker.mjs', ...(over.args ?? [])] },
      env: over.env ?? {},
      configSchema: {
        type: 'object',
        properties: { actions: { type: 'array', items: { type: 'string' } } },
        required: ['actions'],
      },
    }),
  );
  over.files?.(dir);
  return dir;
}

async function attack(
  dir: string,
  actions: string[],
  sandbox: Backend,
): Promise<{ outcome: RunOutcome; results: Record<string, string> }> {
  const outcome = await host.runs.runAdHoc({ runner: dir, event: textEvent('attack'), config: { actions }, sandbox });
  const text = (outcome.result?.output?.parts[0] as { text?: string } | undefined)?.text;
  return { outcome, results: text ? (JSON.parse(text) as Record<string, string>) : {} };
}

describe('item 2: nothing named by the runner package enters the sandbox', () => {
  it(
    'bwrap: absolute paths in entry.args (/, /etc, /root, the data dir, {runnerDir}/../..) and links in the ' +
      'runner folder expose nothing; the launch binds none of them',
    async () => {
      const outside = mkdtempSync(join(tmpdir(), 'paddock-outside-'));
      writeFileSync(join(outside, 'secret.txt'), 'OUTSIDE-CANARY');
      mkdirSync('/root', { recursive: true });
      const rootCanary = join('/root', `paddock-pkg-canary-${process.pid}`);
      writeFileSync(rootCanary, 'ROOT-CANARY');
      try {
        const dir = attackerFolder({
          args: ['/', '/etc', '/root', host.dataDir, '{runnerDir}/../..', outside, join(outside, 'secret.txt')],
          files: (d) => {
            symlinkSync('/etc/shadow', join(d, 'shadow'));
            symlinkSync(outside, join(d, 'outside'));
            symlinkSync('/', join(d, 'root'));
            symlinkSync(join(host.dataDir, 'paddock.db'), join(d, 'db'));
          },
        });
        const targets = [
          '/etc/shadow',
          rootCanary,
          join(host.dataDir, 'paddock.db'),
          join(outside, 'secret.txt'),
          join(dir, 'shadow'),
          join(dir, 'outside', 'secret.txt'),
          join(dir, 'root', 'etc', 'shadow'),
          join(dir, 'db'),
        ];
        const { outcome, results } = await attack(
          dir,
          [...targets.map((t) => `read:${t}`), `read:${join(dir, 'attacker.mjs')}`],
          'bwrap',
        );
        expect(outcome.status, outcome.reason).toBe('completed');
        // Links are resolved inside the sandbox: their targets are not visible there, so they dangle.
        for (const t of targets) expect(results[`read:${t}`], t).toBe('ENOENT');
        expect(results[`read:${join(dir, 'attacker.mjs')}`]).toMatch(/^ok /); // its own folder is readable
        // The binds of the real launch (audited) hold nothing the package named.
        const spawned = host.store.audit
          .records()
          .filter((r) => r.type === 'run.spawned')
          .at(-1)!.data as { binds: { source: string; target: string; mode: string }[] };
        const sources = spawned.binds.filter((b) => b.mode !== 'link' && b.mode !== 'own').map((b) => b.source);
        for (const named of ['/', '/etc', '/root', host.dataDir, outside, join(outside, 'secret.txt'), tmpdir()])
          expect(sources, named).not.toContain(named);
        expect(sources).toContain(dir);
      } finally {
        // Own canary only.
        writeFileSync(rootCanary, '');
        (await import('node:fs')).rmSync(rootCanary, { force: true });
      }
    },
  );

  it(
    'explain lists every bind of the launch itself: its binds are the audited binds of a real run of the ' + 'binding',
    async () => {
      const root = mkdtempSync(join(tmpdir(), 'paddock-pkg-roots-'));
      for (const d of ['ro', 'repo']) mkdirSync(join(root, d));
      // What an admin does before granting folders: readable by the run identity, the rw one writable
      // (docs/admin-guide.md "Run identity").
      for (const d of [root, join(root, 'ro')]) chmodSync(d, 0o755);
      chmodSync(join(root, 'repo'), 0o777);
      const h = tempHost({ mountRoots: [root] });
      try {
        h.apply({
          resources: { mounts: [{ id: 'repo', path: join(root, 'repo'), mode: 'rw' }] },
          bindings: [
            {
              id: 'pkg',
              runner: 'tries-sandbox-escapes',
              route: { platform: 'telegram', bot: 'pkg-bot' },
              sandbox: 'bwrap',
              workspace: 'mount',
              grants: { mounts: ['repo'] },
              readPaths: [join(root, 'ro')],
              network: { egress: ['example.com'] },
              config: { actions: [] },
            },
          ],
        });
        const repo = new ConfigRepo(h.store);
        const explanation = explainBinding(
          repo.binding('pkg').spec as Binding,
          discoverRunners([FIXTURE_RUNNERS]),
          repo.snapshot().resources,
          h.config.limits,
          { dataDir: h.dataDir, harnessDir: HARNESS_DIR, mountRoots: [root] },
        );
        const ticket = await h.dispatcher.dispatch(chatEvent({ bot: 'pkg-bot' }));
        if (ticket.status === 'duplicate') throw new Error('duplicate');
        const outcome = await ticket.done;
        expect(outcome.status, outcome.reason).toBe('completed');
        const spawned = h.store.audit.records().find((r) => r.type === 'run.spawned' && r.runId === ticket.runId)!;
        const bundle = (spawned.data as { args: string[] }).args.at(-1)!;
        // The run's own names become explain's placeholders; nothing else may differ.
        const placeholders = (text: string) =>
          text
            .replaceAll(ticket.runId, '<runId>')
            .replaceAll(spawned.sessionId!, '<sessionId>')
            .replaceAll(bundle, join(h.dataDir, 'bundles', '<bundle of index.ts>.mjs'));
        const audited = JSON.parse(placeholders(JSON.stringify((spawned.data as { binds: unknown }).binds))) as unknown;
        expect(explanation.binds).toEqual(audited);
        const text = renderExplanation(explanation);
        for (const must of [
          join(root, 'ro'),
          join(root, 'repo'),
          join(h.dataDir, 'workspaces', '<runId>'),
          join(h.dataDir, 'sessions', '<sessionId>'),
          FIXTURE_RUNNERS,
        ])
          expect(text).toContain(must);
        expect(explanation.worstCase.writable).toContain(
          `${join(root, 'repo')} at ${join(h.dataDir, 'workspaces', '<runId>', 'in', 'mounts', 'repo')}`,
        );
      } finally {
        await h.close();
      }
    },
  );

  it('bwrap: an entry.command outside the runner folder is not visible in the sandbox, so it never runs', async () => {
    const outside = mkdtempSync(join(tmpdir(), 'paddock-outcmd-'));
    const canary = join(outside, 'ran');
    writeFileSync(join(outside, 'run.sh'), `#!/bin/sh\necho ran > ${canary}\n`);
    chmodSync(join(outside, 'run.sh'), 0o755);
    chmodSync(outside, 0o755);
    const dir = attackerFolder({ command: join(outside, 'run.sh') });
    const outcome = await host.runs.runAdHoc({
      runner: dir,
      event: textEvent('x'),
      config: { actions: [] },
      sandbox: 'bwrap',
    });
    expect(outcome.status).not.toBe('completed');
    expect(existsSync(canary)).toBe(false);
  });

  it(
    'process: the report says the filesystem is not isolated (the ' + 'weak backend reads what the host user reads)',
    async () => {
      const dir = attackerFolder();
      const starts: string[] = [];
      const outcome = await host.runs.runAdHoc({
        runner: dir,
        event: textEvent('x'),
        config: { actions: [] },
        sandbox: 'process',
        onStart: (s) => starts.push(...s.isolation.notEnforced),
      });
      expect(outcome.status, outcome.reason).toBe('completed');
      expect(starts.some((g) => g.startsWith('filesystem isolation'))).toBe(true);
    },
  );
});

describe('item 3: a TypeScript entry is built confined to its runner folder', () => {
  const secretDir = mkdtempSync(join(tmpdir(), 'paddock-buildsecret-'));
  const CANARY = `BUILD-CANARY-${process.pid}-${Date.now()}`;
  const secret = join(secretDir, 'secret.txt');
  writeFileSync(secret, `${CANARY}\n`);
  writeFileSync(join(secretDir, 'secret.json'), JSON.stringify({ canary: CANARY }));
  writeFileSync(join(secretDir, 'secret.js'), `export default ${JSON.stringify(CANARY)};\n`);
  const bundles = join(host.dataDir, 'bundles');

  /** A runner folder with a TypeScript entry; `files` maps paths (relative) to contents. */
  function tsRunner(files: Record<string, string>, extra?: (dir: string) => void): string {
    const dir = mkdtempSync(join(tmpdir(), 'paddock-tsrunner-'));
    chmodSync(dir, 0o755);
    writeFileSync(
      join(dir, 'runner.json'),
      JSON.stringify({
        id: 'ts-runner',
        name: 'ts',
        version: '1',
        protocolVersion: 1,
        entry: { node: 'index.ts' },
        configSchema: { type: 'object' },
      }),
    );
    for (const [name, text] of Object.entries(files)) {
      mkdirSync(join(dir, name, '..'), { recursive: true });
      writeFileSync(join(dir, name), text);
    }
    extra?.(dir);
    return dir;
  }
  const RUNNER = (value: string) =>
    `import { defineRunner, serve } from 'paddock/sdk';
import { readFileSync } from 'node:fs';
await ` +
    `serve(defineRunner({ manifest: { name: 'ts', version: '1' }, async run(_event, binding) {
  const reads: ` +
    `Record<string, string> = {};
  for (const p of ((binding.config as { read?: string[] }).read ?? [])) { try ` +
    `{ reads[p] = 'ok ' + readFileSync(p).length; } catch (e) { reads[p] = (e as NodeJS.ErrnoException).code ?? ` +
    `'error'; } }
  return JSON.stringify({ value: ${JSON.stringify(value)}, reads, bundle: process.argv[1] ` +
    `});
} }));
`;

  const rel = (dir: string) => relative(dir, secret);
  const attacks: [string, (dir: string) => Record<string, string>, ((dir: string) => void)?][] = [
    [
      'an absolute import with type text',
      () => ({ 'index.ts': `import s from '${secret}' with { type: 'text' };\nconsole.log(s);\n` }),
    ],
    [
      'a ../../.. relative import',
      (dir) => ({ 'index.ts': `import s from './${rel(dir)}' with { type: 'text' };\nconsole.log(s);\n` }),
    ],
    [
      'a link in the runner folder to the outside',
      () => ({ 'index.ts': `import s from './out/secret.txt' with { type: 'text' };\nconsole.log(s);\n` }),
      (dir) => symlinkSync(secretDir, join(dir, 'out')),
    ],
    [
      'a link to /etc',
      () => ({ 'index.ts': `import s from './etc/shadow' with { type: 'text' };\nconsole.log(s);\n` }),
      (dir) => symlinkSync('/etc', join(dir, 'etc')),
    ],
    [
      'require() of an absolute path',
      () => ({ 'index.ts': `const s = require('${join(secretDir, 'secret.js')}');\nconsole.log(s);\n` }),
    ],
    [
      'a dynamic import',
      () => ({ 'index.ts': `const s = await import('${join(secretDir, 'secret.js')}');\nconsole.log(s);\n` }),
    ],
    ['type bytes', () => ({ 'index.ts': `import s from '${secret}' with { type: 'bytes' };\nconsole.log(s);\n` })],
    [
      'type json',
      () => ({
        'index.ts': `import s from '${join(secretDir, 'secret.json')}' with { type: 'json' };\nconsole.log(s);\n`,
      }),
    ],
    [
      'tsconfig paths',
      () => ({
        'index.ts': `import s from 'leak' with { type: 'text' };\nconsole.log(s);\n`,
        'tsconfig.json': JSON.stringify({ compilerOptions: { baseUrl: '.', paths: { leak: [secret] } } }),
      }),
    ],
    [
      'a package main pointing outside',
      (dir) => ({
        'index.ts': `import s from 'evil';\nconsole.log(s);\n`,
        'node_modules/evil/package.json': JSON.stringify({
          name: 'evil',
          main: relative(join(dir, 'node_modules/evil'), join(secretDir, 'secret.js')),
        }),
      }),
    ],
    [
      'a package exports pointing outside',
      (dir) => ({
        'index.ts': `import s from 'evil';\nconsole.log(s);\n`,
        'node_modules/evil/package.json': JSON.stringify({
          name: 'evil',
          exports: { '.': `./${relative(join(dir, 'node_modules/evil'), join(secretDir, 'secret.js'))}` },
        }),
      }),
    ],
    [
      'a linked package',
      () => ({ 'index.ts': `import s from 'evil/secret.js';\nconsole.log(s);\n` }),
      (dir) => (mkdirSync(join(dir, 'node_modules')), symlinkSync(secretDir, join(dir, 'node_modules', 'evil'))),
    ],
    [
      "a path through paddock's own dependency",
      () => ({
        'index.ts': `import s from 'zod/../../../../../../../..${secret}' with { type: 'text' };\nconsole.log(s);\n`,
      }),
    ],
  ];

  it.each(attacks)(
    '%s: the build fails, naming the import, and the file never reaches a bundle',
    async (_name, files, extra) => {
      const dir = tsRunner({}, (d) => {
        for (const [name, text] of Object.entries(files(d))) {
          mkdirSync(join(d, name, '..'), { recursive: true });
          writeFileSync(join(d, name), text);
        }
        extra?.(d);
      });
      const error = await host.runs
        .runAdHoc({ runner: dir, event: textEvent('x'), sandbox: 'bwrap' })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(HostError);
      expect((error as HostError).code).toBe('RUNNER_BUILD_FAILED');
      expect((error as Error).message).not.toContain(CANARY);
      expect((error as Error).message).toMatch(/outside the runner folder|Could not resolve|not supported/);
      // The run that could not start is ended as failed, with the reason (nothing left queued).
      const ended = host.store.audit
        .records()
        .filter((r) => r.type === 'run.ended')
        .at(-1)!;
      expect(ended.data).toMatchObject({ status: 'failed', started: false });
      expect(String((ended.data as { reason: string }).reason)).toContain('cannot build runner entry');
      expect(filesContaining(host.dataDir, CANARY)).toEqual([]);
      expect(filesContaining(repoPath('node_modules/.cache'), CANARY)).toEqual([]);
    },
  );

  it(
    'a tsconfig.json extends pointing at a host file is not ' + 'read (esbuild reads no tsconfig of the tree)',
    async () => {
      // broken on purpose: a read would fail the build quoting it
      writeFileSync(join(secretDir, 'tsconfig.json'), `{ "compilerOptions": { "paths": { "x": ["${CANARY}"] } }`);
      const dir = tsRunner({
        'index.ts': RUNNER('extends'),
        'tsconfig.json': JSON.stringify({ extends: join(secretDir, 'tsconfig.json') }),
        'sub/tsconfig.json': JSON.stringify({ extends: '/etc/shadow' }),
      });
      const outcome = await host.runs.runAdHoc({ runner: dir, event: textEvent('x'), config: {}, sandbox: 'process' });
      expect(outcome.status, outcome.reason).toBe('completed');
      expect(filesContaining(bundles, CANARY)).toEqual([]);
    },
  );

  it.each(BACKENDS)(
    '%s: files of its own folder may be imported; its bundle is in <data>/bundles, private, and the only ' +
      'bundle its sandbox can see',
    async (backend) => {
      const other = tsRunner({ 'index.ts': RUNNER('other') });
      const first = await host.runs.runAdHoc({ runner: other, event: textEvent('x'), config: {}, sandbox: backend });
      expect(first.status, first.reason).toBe('completed');
      const otherBundle = (JSON.parse((first.result!.output!.parts[0] as { text: string }).text) as { bundle: string })
        .bundle;
      expect(otherBundle.startsWith(`${bundles}/`)).toBe(true);
      // Nothing listable or readable by others: 0700, or 0710 with the run identity's group (search only) under a root
      // host.
      expect(statSync(bundles).mode & 0o767).toBe(0o700);
      // private through its 0700 folder; readable by whatever uid the run is mapped to
      expect(statSync(otherBundle).mode & 0o777).toBe(0o644);

      const dir = tsRunner({
        'index.ts':
          `import note from './note.txt' with { type: 'text' };\n` + `${RUNNER('own').replace('"own"', 'note.trim()')}`,
        'note.txt': 'own file\n',
      });
      const outcome = await host.runs.runAdHoc({
        runner: dir,
        event: textEvent('x'),
        config: { read: [otherBundle, bundles, join(bundles, 'manifest.json')] },
        sandbox: backend,
      });
      expect(outcome.status, outcome.reason).toBe('completed');
      const report = JSON.parse((outcome.result!.output!.parts[0] as { text: string }).text) as {
        value: string;
        reads: Record<string, string>;
        bundle: string;
      };
      expect(report.value).toBe('own file');
      expect(report.bundle.startsWith(`${bundles}/`)).toBe(true);
      if (backend === 'bwrap') {
        expect(report.reads[otherBundle]).toBe('ENOENT');
        expect(report.reads[join(bundles, 'manifest.json')]).toBe('ENOENT');
        expect(report.reads[bundles]).toBe('EISDIR'); // the directory exists inside (parent of the bound file), empty
      }
      // Nothing of a runner build is left in the package's node_modules cache.
      expect(existsSync(join(repoPath('node_modules/.cache/paddock/runners'), basename(report.bundle)))).toBe(false);
    },
  );

  it('a changed entry with the same size and mtime is rebuilt (the cache checks content)', async () => {
    const dir = tsRunner({ 'index.ts': RUNNER('AAAA') });
    const run = async () =>
      (
        JSON.parse(
          (
            (await host.runs.runAdHoc({ runner: dir, event: textEvent('x'), config: {}, sandbox: 'process' })).result!
              .output!.parts[0] as { text: string }
          ).text,
        ) as { value: string }
      ).value;
    expect(await run()).toBe('AAAA');
    const file = join(dir, 'index.ts');
    const { atime, mtime } = statSync(file);
    writeFileSync(file, RUNNER('BBBB'));
    utimesSync(file, atime, mtime);
    expect(await run()).toBe('BBBB');
    expect(readFileSync(file, 'utf8')).toContain('BBBB');
  });
});
