// Installing, pinning, verifying, updating and removing runner packages (docs/runner-packages.md) on a real host:
// real npm (offline: folders and tarballs), a real store and audit, real runs of the installed runner.
import { appendFileSync, chmodSync, existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { explainStoredBinding } from '../../../host/admin/bindings.js';
import { applyAs, validationContext } from '../../../host/admin/config.js';
import { packageSummaries, removeRunnerPackage, verifyRunnerPackages } from '../../../host/admin/runnerPackages.js';
import type { DispatchTicket } from '../../../host/dispatch/dispatcher.js';
import { HostError } from '../../../host/errors.js';
import { installRunnerPackage, type InstallReview } from '../../../host/packages/install.js';
import { packageDir, packageRunnerDir } from '../../../host/packages/installedRunners.js';
import { runnerPackage } from '../../../host/state/runnerPackages.js';
import { repoPath } from '../../helpers/fixtures.js';
import { chatEvent, tempHost } from '../../helpers/host.js';
import { emptyFolder } from '../../helpers/packageTree.js';
import { packTestPackage, writeTestPackage } from '../../helpers/runnerPackage.js';

const hosts: ReturnType<typeof tempHost>[] = [];
afterAll(async () => {
  for (const h of hosts) await h.close();
});

function host() {
  const h = tempHost();
  hosts.push(h);
  return h;
}

const by = 'user:admin';
const refusal = (error: unknown) => {
  expect(error).toBeInstanceOf(HostError);
  expect((error as HostError).code).toBe('PACKAGE_REFUSED');
  return error as HostError;
};

/** Dispatch one message to `bot` and wait for the run's end. */
async function runOnce(h: ReturnType<typeof tempHost>, bot: string) {
  const ticket = (await h.dispatcher.dispatch(chatEvent({ bot }))) as Exclude<DispatchTicket, { status: 'duplicate' }>;
  return ticket.done;
}

/** Apply a binding of `runner` routed from bot `bot` (the store's own catalog: installed packages included). */
function bind(h: ReturnType<typeof tempHost>, bindings: { id: string; runner: string }[]) {
  return applyAs(
    h.store,
    { bindings: bindings.map((b) => ({ ...b, route: { bot: b.id }, sandbox: 'process' })) },
    validationContext(h.config, h.redactor, h.store),
    { by },
  );
}

describe('paddock runners install (real npm, offline)', () => {
  it('installs a folder without running any of its scripts: read-only, recorded with its digest, audited', async () => {
    const h = host();
    const markers = emptyFolder();
    const folder = writeTestPackage({ id: 'greeter', version: '1.0.0', markers });
    const steps: string[] = [];
    const result = await installRunnerPackage(h.store, h.config, folder, {
      accept: true,
      by,
      progress: (s) => steps.push(s),
    });
    expect(result.status).toBe('installed');
    expect(readdirSync(markers)).toEqual([]);
    expect(steps[0]).toContain('fetching');
    expect(result.review.skippedScripts).toEqual(['paddock-runner-greeter']);
    const row = runnerPackage(h.store, 'greeter', '1.0.0')!;
    expect(row).toMatchObject({ source: 'folder', spec: folder, status: 'ok', digest: result.digest, installedBy: by });
    const runnerDir = packageRunnerDir(h.dataDir, 'greeter', '1.0.0', 'paddock-runner-greeter');
    expect(statSync(join(runnerDir, 'index.mjs')).mode & 0o777).toBe(0o444);
    expect(statSync(runnerDir).mode & 0o777).toBe(0o555);
    const audited = h.store.audit.records({ types: ['runner.installed'] }).at(-1)!;
    expect(audited.actor).toBe(by);
    expect(audited.data).toMatchObject({
      runner: 'greeter',
      version: '1.0.0',
      digest: result.digest,
      source: 'folder',
    });
    // Nothing is left in the staging folder.
    expect(readdirSync(join(h.dataDir, 'runners', '.incoming'))).toEqual([]);
    // The same version again: nothing changes.
    expect((await installRunnerPackage(h.store, h.config, folder, { by })).status).toBe('unchanged');
  });

  it('a new runner without --accept is refused with its review, and nothing is kept', async () => {
    const h = host();
    const folder = writeTestPackage({
      id: 'asker',
      version: '1.0.0',
      hostRequests: ['state/get'],
      effects: ['network'],
    });
    const error = refusal(await installRunnerPackage(h.store, h.config, folder, { by }).catch((e: unknown) => e));
    expect(error.data.reason).toBe('not_accepted');
    expect(error.message).toContain('pass --accept');
    const review = error.data.review as InstallReview;
    expect(review.permissions).toMatchObject({ hostRequests: ['state/get'], effects: ['network'] });
    expect(runnerPackage(h.store, 'asker', '1.0.0')).toBeUndefined();
    expect(existsSync(packageDir(h.dataDir, 'asker', '1.0.0'))).toBe(false);
    expect(readdirSync(join(h.dataDir, 'runners', '.incoming'))).toEqual([]);
    // An interactive "no" is the same refusal; a "yes" installs.
    const asked: InstallReview[] = [];
    await expect(
      installRunnerPackage(h.store, h.config, folder, { by, confirm: async (r) => (asked.push(r), false) }),
    ).rejects.toThrow(/pass --accept/);
    expect((await installRunnerPackage(h.store, h.config, folder, { by, confirm: async () => true })).status).toBe(
      'installed',
    );
    expect(asked).toHaveLength(1);
  });

  it('installs a tarball made by npm pack, side by side with another version', async () => {
    const h = host();
    await installRunnerPackage(h.store, h.config, writeTestPackage({ id: 'twin', version: '1.0.0' }), {
      by,
      accept: true,
    });
    const tarball = packTestPackage(writeTestPackage({ id: 'twin', version: '1.1.0' }));
    const result = await installRunnerPackage(h.store, h.config, tarball, { by });
    // Same permissions as 1.0.0: an update that widens nothing needs no new acceptance.
    expect(result.review.diff).toMatchObject({ against: '1.0.0', widened: [], narrowed: [] });
    expect(result.review.source).toBe('tarball');
    expect(packageSummaries(h.store, h.config, 'twin').map((p) => [p.version, p.newest])).toEqual([
      ['1.1.0', true],
      ['1.0.0', false],
    ]);
  });

  it('refuses a package that is no runner package, has a dependency off the registry, or a native build', async () => {
    const h = host();
    const wrongName = writeTestPackage({ id: 'named', version: '1.0.0', packageJson: { name: 'something-else' } });
    expect(
      refusal(await installRunnerPackage(h.store, h.config, wrongName, { by, accept: true }).catch((e: unknown) => e))
        .message,
    ).toMatch(/package\.json: field name/);
    // A dependency from a folder of the installing host would copy that folder into the package.
    const hostFolder = emptyFolder();
    writeFileSync(join(hostFolder, 'package.json'), JSON.stringify({ name: 'host-secrets', version: '1.0.0' }));
    writeFileSync(join(hostFolder, 'secret.txt'), 'canary-host-file');
    const pulling = writeTestPackage({
      id: 'puller',
      version: '1.0.0',
      packageJson: { dependencies: { 'host-secrets': `file:${hostFolder}` } },
    });
    const pulled = refusal(
      await installRunnerPackage(h.store, h.config, pulling, { by, accept: true }).catch((e: unknown) => e),
    );
    expect(pulled.message).toMatch(/dependency host-secrets comes from "file:.*": only registry dependencies/);
    expect(runnerPackage(h.store, 'puller', '1.0.0')).toBeUndefined();
    const markers = emptyFolder();
    const native = writeTestPackage({ id: 'native', version: '1.0.0', nativeBuild: true, markers });
    const error = refusal(
      await installRunnerPackage(h.store, h.config, native, { by, accept: true }).catch((e: unknown) => e),
    );
    expect(error.data.reason).toBe('native_build');
    expect(error.message).toContain('--allow-native-build');
    expect(readdirSync(markers)).toEqual([]);
    // Allowed: audited with who allowed it, and then its install scripts do run.
    await installRunnerPackage(h.store, h.config, native, { by, accept: true, allowNativeBuild: true });
    expect(h.store.audit.records({ types: ['runner.native_build'] }).at(-1)).toMatchObject({
      actor: by,
      data: { runner: 'native', version: '1.0.0' },
    });
    expect(readdirSync(markers)).toContain('install');
  });
});

describe('the packed built-in runners and hello-runner (npm pack of the repo folders)', () => {
  it(
    'install and run: hello-runner by its id; echo beside the built-in one, run only when pinned, checked like any ' +
      'package',
    async () => {
      const h = host();
      const hello = packTestPackage(repoPath('examples/hello-runner'));
      const echo = packTestPackage(repoPath('runners/echo'));
      const installed = await installRunnerPackage(h.store, h.config, hello, { by, accept: true });
      expect(installed.review.builtinId).toBe(false);
      const echoed = await installRunnerPackage(h.store, h.config, echo, { by, accept: true });
      expect(echoed.review).toMatchObject({ runnerId: 'echo', builtinId: true, source: 'tarball' });
      const echoVersion = echoed.review.version;
      bind(h, [
        { id: 'hello', runner: 'hello-runner' },
        { id: 'echo-pinned', runner: `echo@${echoVersion}` },
        { id: 'echo-builtin', runner: 'echo' },
      ]);
      // Which folder each run ran, from its run.spawned audit record.
      const ranFrom = async (bot: string) => {
        const outcome = await runOnce(h, bot);
        const spawned = h.store.audit.records({ types: ['run.spawned'] }).at(-1)!.data as { runner: { dir: string } };
        return [outcome.status, spawned.runner.dir];
      };
      expect(await ranFrom('hello')).toEqual([
        'completed',
        packageRunnerDir(h.dataDir, 'hello-runner', installed.review.version, 'paddock-example-hello-runner'),
      ]);
      expect(await ranFrom('echo-pinned')).toEqual([
        'completed',
        packageRunnerDir(h.dataDir, 'echo', echoVersion, 'paddock-runner-echo'),
      ]);
      expect(await ranFrom('echo-builtin')).toEqual(['completed', repoPath('runners/echo')]);
    },
  );
});

describe('an update that asks for more', () => {
  it('is refused without acceptance and shows the diff; accepted, it installs beside the old one', async () => {
    const h = host();
    await installRunnerPackage(h.store, h.config, writeTestPackage({ id: 'grower', version: '1.0.0' }), {
      by,
      accept: true,
    });
    const wider = writeTestPackage({
      id: 'grower',
      version: '1.1.0',
      hostRequests: ['state/get'],
      effects: ['network'],
      risk: 'It now reaches the network.',
    });
    const error = refusal(
      await installRunnerPackage(h.store, h.config, wider, { by, updateOf: 'grower' }).catch((e: unknown) => e),
    );
    expect(error.data.reason).toBe('not_accepted');
    const { diff } = error.data.review as InstallReview;
    expect(diff?.against).toBe('1.0.0');
    expect(diff?.widened).toEqual(
      expect.arrayContaining(['+ host request state/get', '+ effect network', expect.stringMatching(/^± risk note/)]),
    );
    expect(error.message).toContain('+ host request state/get');
    expect(runnerPackage(h.store, 'grower', '1.1.0')).toBeUndefined();
    await installRunnerPackage(h.store, h.config, wider, { by, updateOf: 'grower', accept: true });
    expect(h.store.audit.records({ types: ['runner.installed'] }).at(-1)!.data).toMatchObject({
      version: '1.1.0',
      diff: { against: '1.0.0' },
    });
    // An update of another runner's id is refused.
    const other = writeTestPackage({ id: 'stranger', version: '2.0.0' });
    expect(
      refusal(
        await installRunnerPackage(h.store, h.config, other, { by, updateOf: 'grower', accept: true }).catch(
          (e: unknown) => e,
        ),
      ).message,
    ).toContain('not "grower"');
  });
});

describe('installed runners at run time', () => {
  it(
    'a binding pinned to 1.0.0 keeps running 1.0.0 after 1.1.0 is installed; the bare id follows the newest; ' +
      'one edited byte refuses the next run (runner_tampered, audited, shown) until the version is installed again',
    async () => {
      const h = host();
      const v1 = writeTestPackage({ id: 'pinned', version: '1.0.0' });
      await installRunnerPackage(h.store, h.config, v1, { by, accept: true });
      bind(h, [
        { id: 'pins', runner: 'pinned@1.0.0' },
        { id: 'follows', runner: 'pinned' },
      ]);
      const first = await runOnce(h, 'pins');
      expect(first, JSON.stringify(first)).toMatchObject({ status: 'completed', runner: { version: '1.0.0' } });
      await installRunnerPackage(h.store, h.config, writeTestPackage({ id: 'pinned', version: '1.1.0' }), { by });
      const [pinned, follows] = [await runOnce(h, 'pins'), await runOnce(h, 'follows')];
      expect([pinned.status, pinned.runner?.version, follows.status, follows.runner?.version]).toEqual([
        'completed',
        '1.0.0',
        'completed',
        '1.1.0',
      ]);

      // A process-backend runner runs as the host user: it can make its own files writable again and change them.
      const file = join(packageRunnerDir(h.dataDir, 'pinned', '1.0.0', 'paddock-runner-pinned'), 'index.mjs');
      chmodSync(file, 0o644);
      appendFileSync(file, ' ');
      const refused = (await h.dispatcher.dispatch(chatEvent({ bot: 'pins' })).catch((e: unknown) => e)) as HostError;
      expect(refused).toBeInstanceOf(HostError);
      expect(refused.data).toMatchObject({ reason: 'runner_tampered', bindingId: 'pins' });
      expect(refused.message).toContain('node_modules/paddock-runner-pinned/index.mjs');
      const tampered = h.store.audit.records({ types: ['runner.tampered'] });
      expect(tampered).toHaveLength(1);
      expect(tampered[0]!.data).toMatchObject({
        runner: 'pinned',
        version: '1.0.0',
        changed: ['node_modules/paddock-runner-pinned/index.mjs'],
      });
      expect(runnerPackage(h.store, 'pinned', '1.0.0')!.status).toBe('tampered');
      const explained = explainStoredBinding(
        h.store,
        h.config,
        validationContext(h.config, h.redactor, h.store),
        'pins',
      );
      expect(explained.runner).toMatchObject({ package: { status: 'tampered' } });
      // Refused again without another audit record; the other version still runs.
      await expect(h.dispatcher.dispatch(chatEvent({ bot: 'pins' }))).rejects.toThrow(/changed since it was installed/);
      expect(h.store.audit.records({ types: ['runner.tampered'] })).toHaveLength(1);
      expect((await runOnce(h, 'follows')).status).toBe('completed');

      // Installing the same version again repairs it (re-accepted, audited).
      const repair = await installRunnerPackage(h.store, h.config, v1, { by, accept: true });
      expect(repair.status).toBe('repaired');
      expect(h.store.audit.records({ types: ['runner.repaired'] })).toHaveLength(1);
      expect((await runOnce(h, 'pins')).runner?.version).toBe('1.0.0');
    },
  );

  it('a touch is not a change; an added file is (runners verify re-hashes the whole tree)', async () => {
    const h = host();
    await installRunnerPackage(h.store, h.config, writeTestPackage({ id: 'touched', version: '1.0.0' }), {
      by,
      accept: true,
    });
    const runnerDir = packageRunnerDir(h.dataDir, 'touched', '1.0.0', 'paddock-runner-touched');
    const now = new Date();
    const { utimesSync, writeFileSync } = await import('node:fs');
    utimesSync(join(runnerDir, 'runner.json'), now, now);
    expect(verifyRunnerPackages(h.store, h.config, 'touched@1.0.0', by)).toMatchObject([{ ok: true }]);
    chmodSync(runnerDir, 0o755);
    writeFileSync(join(runnerDir, 'extra.js'), '');
    expect(verifyRunnerPackages(h.store, h.config, undefined, by)).toMatchObject([
      { ok: false, changed: ['node_modules/paddock-runner-touched/extra.js'] },
    ]);
  });
});

describe('paddock runners remove', () => {
  it('refuses while a binding uses the version; --disable-bindings disables it (audited), then removes', async () => {
    const h = host();
    await installRunnerPackage(h.store, h.config, writeTestPackage({ id: 'busy', version: '1.0.0' }), {
      by,
      accept: true,
    });
    bind(h, [{ id: 'uses-busy', runner: 'busy@1.0.0' }]);
    const attempt = () => {
      try {
        removeRunnerPackage(h.store, h.config, 'busy@1.0.0', { by });
      } catch (error) {
        return error;
      }
      throw new Error('removed while in use');
    };
    const error = refusal(attempt());
    expect(error.data).toMatchObject({ reason: 'in_use', bindings: ['uses-busy'] });
    expect(error.message).toContain('"uses-busy"');
    expect(runnerPackage(h.store, 'busy', '1.0.0')).toBeDefined();
    const report = removeRunnerPackage(h.store, h.config, 'busy@1.0.0', { by, disableBindings: true });
    expect(report.disabledBindings).toEqual(['uses-busy']);
    expect(runnerPackage(h.store, 'busy', '1.0.0')).toBeUndefined();
    expect(existsSync(packageDir(h.dataDir, 'busy', '1.0.0'))).toBe(false);
    expect(h.store.audit.records({ types: ['runner.removed'] }).at(-1)).toMatchObject({
      actor: by,
      data: { runner: 'busy', version: '1.0.0', disabledBindings: ['uses-busy'] },
    });
    await expect(h.dispatcher.dispatch(chatEvent({ bot: 'uses-busy' }))).rejects.toThrow(/disabled/);
  });
});
