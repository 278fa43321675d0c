// The built-in runners and examples/hello-runner are npm packages (docs/runner-packages.md §8, issue 18 item 5): each
// one's `npm pack` ships exactly its runner folder, and the tarball, staged as `paddock runners install` stages it
// (host/packages/stage.ts: real npm, offline, no script run), is a runner the host accepts: its manifest validates,
// its package.json names it, and its entry builds from its own folder alone (plus the host's SDK).
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { applyAs, validationContext } from '../../../host/admin/config.js';
import type { DispatchTicket } from '../../../host/dispatch/dispatcher.js';
import { installRunnerPackage } from '../../../host/packages/install.js';
import { readPackageIdentity } from '../../../host/packages/packageIdentity.js';
import { stagePackage } from '../../../host/packages/stage.js';
import { readTree } from '../../../host/packages/treeDigest.js';
import { checkedManifest } from '../../../host/plugins/catalog.js';
import { runnerCommand } from '../../../host/plugins/resolveRunner.js';
import { jsonLines, paddock } from '../../helpers/cli.js';
import { repoPath } from '../../helpers/fixtures.js';
import { chatEvent, tempHost } from '../../helpers/host.js';
import { emptyFolder } from '../../helpers/packageTree.js';

const hosts: ReturnType<typeof tempHost>[] = [];
afterAll(async () => {
  for (const h of hosts) await h.close();
});

const PACKAGES = [...readdirSync(repoPath('runners')).map((name) => `runners/${name}`), 'examples/hello-runner'].sort();

/** `npm pack` of a runner folder into a fresh folder: the tarball and the files npm says it holds. */
function pack(folder: string): { tarball: string; files: string[] } {
  const out = emptyFolder();
  const json = execFileSync('npm', ['pack', '--json', '--offline', '--pack-destination', out], {
    cwd: repoPath(folder),
    encoding: 'utf8',
  });
  const [packed] = JSON.parse(json) as { filename: string; files: { path: string }[] }[];
  return { tarball: join(out, packed!.filename), files: packed!.files.map((f) => f.path).sort() };
}

/** Every file of a folder, relative to it, sorted. */
const filesOf = (dir: string): string[] =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => relative(dir, join(d.parentPath, d.name)))
    .sort();

describe('packable runners (real npm pack and install, offline)', () => {
  it('covers every built-in runner and the example', () => {
    expect(PACKAGES).toEqual([
      'examples/hello-runner',
      'runners/acp',
      'runners/claude-code',
      'runners/codex',
      'runners/echo',
      'runners/local-agent',
    ]);
  });

  it.each(PACKAGES)(
    '%s: npm pack ships exactly the runner; staged, it validates, names itself and builds from its own folder',
    async (folder) => {
      vi.stubEnv('npm_config_offline', 'true'); // stagePackage's npm: nothing from the network
      const { tarball, files } = pack(folder);
      // Exactly the folder: its package.json `files` leaves nothing out and lets nothing else in.
      expect(files).toEqual(filesOf(repoPath(folder)));

      const staged = await stagePackage(tarball, emptyFolder());
      const pkg = JSON.parse(readFileSync(repoPath(`${folder}/package.json`), 'utf8')) as { name: string };
      expect(staged).toMatchObject({ source: 'tarball', name: pkg.name, skippedInstallScripts: [] });
      // No dependency of its own: the SDK (and what the host already ships) comes from the host at build time.
      const installed = readdirSync(join(staged.dir, 'node_modules')).filter((n) => n !== '.package-lock.json');
      expect(installed).toEqual([pkg.name]);
      // The unpacked tree is the source folder byte for byte (paths, bytes and exec bits).
      expect(readTree(staged.runnerDir).digest).toBe(readTree(repoPath(folder)).digest);

      const runner = checkedManifest(staged.runnerDir);
      const identity = readPackageIdentity(staged.runnerDir);
      expect(identity).toEqual({
        ok: true,
        identity: { id: runner.manifest.id, version: runner.manifest.version, packageName: pkg.name },
      });
      expect(staged.version).toBe(runner.manifest.version);

      // The entry builds confined to the staged folder and the SDK (confineBuild.ts): nothing it imports is missing
      // from the package or reaches outside it.
      const command = await runnerCommand(runner, emptyFolder());
      expect(command.bundle).toMatch(/\.mjs$/);
    },
  );

  it('a staged package runs: echo and hello-runner answer through `paddock run --runner <staged folder>`', async () => {
    vi.stubEnv('npm_config_offline', 'true');
    const answers: Record<string, string> = {};
    for (const folder of ['runners/echo', 'examples/hello-runner']) {
      const staged = await stagePackage(pack(folder).tarball, emptyFolder());
      const r = await paddock(['run', '--runner', staged.runnerDir, '--text', 'Ada', '--json'], {
        dataDir: emptyFolder(),
      });
      expect(r.exitCode, r.stderr).toBe(0);
      answers[folder] = jsonLines(r.stdout)
        .filter((l) => l.type === 'update')
        .map((l) => (l.update as { text?: string }).text ?? '')
        .join('');
    }
    expect(answers).toEqual({
      'runners/echo': 'Ada',
      'examples/hello-runner': 'Hello, Ada! Nice to meet you.',
    });
  });

  it(
    '`paddock runners install` of each tarball: hello-runner installs and runs; each built-in runner installs beside ' +
      'the built-in one',
    async () => {
      vi.stubEnv('npm_config_offline', 'true');
      const h = tempHost();
      hosts.push(h);
      const by = 'user:admin';
      const hello = await installRunnerPackage(h.store, h.config, pack('examples/hello-runner').tarball, {
        by,
        accept: true,
      });
      expect(hello).toMatchObject({ status: 'installed', review: { runnerId: 'hello-runner', version: '1.0.0' } });
      applyAs(
        h.store,
        { bindings: [{ id: 'hello', runner: 'hello-runner@1.0.0', route: { bot: 'hello' }, sandbox: 'process' }] },
        validationContext(h.config, h.redactor, h.store),
        { by },
      );
      const ticket = (await h.dispatcher.dispatch(chatEvent({ bot: 'hello', text: 'Ada' }))) as Exclude<
        DispatchTicket,
        { status: 'duplicate' }
      >;
      const outcome = await ticket.done;
      expect(outcome.status, JSON.stringify(outcome)).toBe('completed');
      expect(outcome.result?.output).toEqual({ parts: [{ type: 'text', text: 'Hello, Ada! Nice to meet you.' }] });

      // Each built-in runner's tarball installs too (issue 18 item 5): beside the built-in runner of its id, which a
      // bare-id binding keeps running; the review says so (decisions RP7).
      for (const folder of PACKAGES.filter((f) => f.startsWith('runners/'))) {
        const id = folder.slice('runners/'.length);
        const result = await installRunnerPackage(h.store, h.config, pack(folder).tarball, { by, accept: true });
        expect(result, folder).toMatchObject({ status: 'installed', review: { runnerId: id, builtinId: true } });
      }
    },
  );
});
