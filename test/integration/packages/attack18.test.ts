// Attacks on installed runner packages from outside (issue 18, attack18): code that runs on a later run although the
// package's tree is unchanged, so the per-run check (docs/runner-packages.md §3) cannot see it.
import {
  appendFileSync,
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { applyAs, validationContext } from '../../../host/admin/config.js';
import type { DispatchTicket } from '../../../host/dispatch/dispatcher.js';
import { installRunnerPackage } from '../../../host/packages/install.js';
import { packageDir, packageRunnerDir } from '../../../host/packages/installedRunners.js';
import { repoPath } from '../../helpers/fixtures.js';
import { chatEvent, tempHost } from '../../helpers/host.js';
import { emptyFolder } from '../../helpers/packageTree.js';
import { packTestPackage, writeTestPackage } from '../../helpers/runnerPackage.js';

const hosts: ReturnType<typeof tempHost>[] = [];
afterAll(async () => {
  for (const h of hosts) await h.close();
});
const by = 'user:admin';

async function runOnce(h: ReturnType<typeof tempHost>, bot: string) {
  const ticket = (await h.dispatcher.dispatch(chatEvent({ bot }))) as Exclude<DispatchTicket, { status: 'duplicate' }>;
  return ticket.done;
}

function bind(h: ReturnType<typeof tempHost>, id: string, runner: string) {
  applyAs(
    h.store,
    { bindings: [{ id, runner, route: { bot: id }, sandbox: 'process' }] },
    validationContext(h.config, h.redactor, h.store),
    { by },
  );
}

describe('attack18: code outside the checked tree', () => {
  // Known, not fixed (docs/security-model.md "Runner packages"): Node resolves a bare name past the install prefix,
  // and the process backend's runner can write there. Turns red once resolution is confined; then make it `it`.
  it.fails('a module planted beside the install prefix (Node looks up past the tree) is not run', async () => {
    const h = tempHost();
    hosts.push(h);
    const marker = join(emptyFolder(), 'planted-ran');
    const folder = writeTestPackage({ id: 'lookup', version: '1.0.0' });
    const index = join(folder, 'index.mjs');
    // The package imports a name it does not ship; a missing module is ignored, so it installs and runs fine.
    writeFileSync(index, `try { await import('paddock-planted'); } catch {}\n` + readFileSync(index, 'utf8'));
    await installRunnerPackage(h.store, h.config, folder, { by, accept: true });
    bind(h, 'lookup', 'lookup');
    expect((await runOnce(h, 'lookup')).status).toBe('completed');
    // What a run of the process backend (the host user) can write: a module one folder above the install prefix.
    const planted = join(h.dataDir, 'runners', 'node_modules', 'paddock-planted');
    mkdirSync(planted, { recursive: true });
    writeFileSync(join(planted, 'package.json'), JSON.stringify({ name: 'paddock-planted', main: 'index.js' }));
    writeFileSync(join(planted, 'index.js'), `require('fs').writeFileSync(${JSON.stringify(marker)}, '')\n`);
    await runOnce(h, 'lookup').catch(() => undefined); // a refusal would hold too
    expect(existsSync(marker)).toBe(false);
  });

  it("a changed bundle of a TypeScript entry (the runner's own code as it runs) is not run", async () => {
    const h = tempHost();
    hosts.push(h);
    const marker = join(emptyFolder(), 'bundle-ran');
    await installRunnerPackage(h.store, h.config, packTestPackage(repoPath('examples/hello-runner')), {
      by,
      accept: true,
    });
    bind(h, 'hello', 'hello-runner');
    expect((await runOnce(h, 'hello')).status).toBe('completed');
    const bundles = join(h.dataDir, 'bundles');
    const files = readdirSync(bundles, { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) {
      const path = join(f.parentPath, f.name);
      if (!/\.(m?js|cjs)$/.test(path)) continue;
      // As the host user (process backend): the bundle is 0644 in a 0700 folder the host user owns.
      writeFileSync(
        path,
        `import { writeFileSync as __w } from 'node:fs'; __w(${JSON.stringify(marker)}, '');\n` +
          readFileSync(path, 'utf8'),
      );
    }
    // Held: the changed file is not the bundle its name says, so it is rebuilt and the run runs the real one.
    expect((await runOnce(h, 'hello')).status).toBe('completed');
    expect(existsSync(marker)).toBe(false);
  });
});

describe('attack18: an update that widens through a value the review does not compare', () => {
  it('held: a manifest cannot name an env Node reads (NODE_OPTIONS): no env value widens past the review', async () => {
    const h = tempHost();
    hosts.push(h);
    const folder = writeTestPackage({ id: 'envy', version: '1.0.0', env: { NODE_OPTIONS: '--import=/tmp/x.mjs' } });
    const error = await installRunnerPackage(h.store, h.config, folder, { by, accept: true }).catch((e: unknown) => e);
    expect((error as { data?: { reason?: string } }).data?.reason).toBe('invalid');
  });
});

describe('attack18: the installed folder swapped for a link', () => {
  it('held: the version folder replaced by a link to an edited copy is runner_tampered', async () => {
    const h = tempHost();
    hosts.push(h);
    const marker = join(emptyFolder(), 'swapped-ran');
    await installRunnerPackage(h.store, h.config, writeTestPackage({ id: 'swap', version: '1.0.0' }), {
      by,
      accept: true,
    });
    bind(h, 'swap', 'swap');
    expect((await runOnce(h, 'swap')).status).toBe('completed');
    const dir = packageDir(h.dataDir, 'swap', '1.0.0');
    const copy = join(emptyFolder(), 'copy');
    cpSync(dir, copy, { recursive: true, preserveTimestamps: true });
    const index = join(
      packageRunnerDir(h.dataDir, 'swap', '1.0.0', 'paddock-runner-swap').replace(dir, copy),
      'index.mjs',
    );
    chmodSync(index, 0o644);
    appendFileSync(index, `\nimport { writeFileSync as __w } from 'node:fs'; __w(${JSON.stringify(marker)}, '');\n`);
    renameSync(dir, `${dir}.away`);
    symlinkSync(copy, dir);
    // Refused at dispatch (a planning refusal), naming the root as what changed.
    await expect(runOnce(h, 'swap')).rejects.toMatchObject({ data: { reason: 'runner_tampered' } });
    expect(existsSync(marker)).toBe(false);
  });
});
