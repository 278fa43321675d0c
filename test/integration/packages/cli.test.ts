// `paddock runners install|list|show|update|verify|remove` through the real command (docs/runner-packages.md): what
// an admin types and reads, without a terminal (no interactive yes: --accept is needed and named).
import { appendFileSync, chmodSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRunnerDir } from '../../../host/packages/installedRunners.js';
import { paddock } from '../../helpers/cli.js';
import { emptyFolder } from '../../helpers/packageTree.js';
import { packTestPackage, writeTestPackage } from '../../helpers/runnerPackage.js';

describe('paddock runners install … remove (the real command)', () => {
  it('reviews, refuses without --accept, installs with progress, lists, shows, verifies and removes', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'paddock-pkg-cli-'));
    const markers = emptyFolder();
    const folder = writeTestPackage({
      id: 'clier',
      version: '1.0.0',
      effects: ['network'],
      risk: 'reaches the web',
      markers,
    });

    const refused = await paddock(['runners', 'install', folder], { dataDir });
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toContain('clier@1.0.0 is a new runner: review what it asks for and pass --accept');
    expect(refused.stderr).toMatch(/effects: +network {2}\(network: reaches the network itself\)/);
    expect(refused.stderr).toContain('risk:           reaches the web');

    const installed = await paddock(['runners', 'install', folder, '--accept', '--by', 'ada', '--progress'], {
      dataDir,
    });
    expect(installed.exitCode, installed.stderr).toBe(0);
    // With --progress every step is named on stderr as it starts, with the time since the start (without it, a
    // short install stays quiet: the quiet second is test/unit/util/progress.test.ts's).
    for (const step of ['fetching', 'checking', 'sealing'])
      expect(installed.stderr).toMatch(new RegExp(`^paddock runners install: ${step}.*, \\d+s$`, 'm'));
    expect(installed.stdout).toMatch(/installed clier@1\.0\.0 into .*runners\/clier@1\.0\.0/);
    expect(installed.stdout).toContain('install scripts NOT run (npm --ignore-scripts): paddock-runner-clier');
    expect(readdirSync(markers)).toEqual([]);

    const wider = packTestPackage(
      writeTestPackage({ id: 'clier', version: '1.1.0', effects: ['network', 'exec'], risk: 'reaches the web' }),
    );
    const update = await paddock(['runners', 'update', 'clier', wider], { dataDir });
    expect(update.exitCode).toBe(2);
    expect(update.stderr).toContain('+ effect exec   (widens: needs acceptance)');
    expect((await paddock(['runners', 'update', 'clier', wider, '--accept'], { dataDir })).exitCode).toBe(0);

    const list = await paddock(['runners', 'list'], { dataDir });
    expect(list.stdout).toMatch(/^clier +1\.1\.0 +installed/m);
    expect(list.stdout).toMatch(/clier@1\.1\.0 \(newest\) {2}ok {2}tarball/);
    expect(list.stdout).toMatch(/clier@1\.0\.0 {2}ok {2}folder/);
    const json = JSON.parse((await paddock(['runners', 'list', '--json'], { dataDir })).stdout) as {
      packages: { runnerId: string; version: string; installedBy: string; digest: string }[];
    };
    expect(json.packages.map((p) => [p.version, p.installedBy])).toEqual([
      ['1.1.0', 'user:root'.replace('root', process.env.USER ?? 'operator')],
      ['1.0.0', 'user:ada'],
    ]);
    const show = await paddock(['runners', 'show', 'clier@1.0.0'], { dataDir });
    expect(show.stdout).toContain('clier 1.0.0');
    expect(show.stdout).toContain('installed by user:ada');
    expect(show.stdout).toContain(`digest ${json.packages[1]!.digest}`);

    expect((await paddock(['runners', 'verify'], { dataDir })).exitCode).toBe(0);
    const file = join(packageRunnerDir(dataDir, 'clier', '1.0.0', 'paddock-runner-clier'), 'runner.json');
    chmodSync(file, 0o644);
    appendFileSync(file, '\n');
    const verify = await paddock(['runners', 'verify', 'clier@1.0.0'], { dataDir });
    expect(verify.exitCode).toBe(1);
    expect(verify.stdout).toContain('clier@1.0.0: TAMPERED — changed: node_modules/paddock-runner-clier/runner.json');
    expect((await paddock(['runners', 'list'], { dataDir })).stdout).toMatch(/clier@1\.0\.0 {2}TAMPERED/);

    const ambiguous = await paddock(['runners', 'remove', 'clier'], { dataDir });
    expect(ambiguous.exitCode).toBe(2);
    expect(ambiguous.stderr).toContain('name one as clier@<version>');
    const removed = await paddock(['runners', 'remove', 'clier@1.0.0'], { dataDir });
    expect(removed.exitCode, removed.stderr).toBe(0);
    expect(removed.stdout).toContain('removed clier@1.0.0');
    expect((await paddock(['runners', 'list'], { dataDir })).stdout).not.toContain('clier@1.0.0');
    // Fifteen real `paddock` processes, four of them npm installs: ~25 s on a quiet 2-core machine, more beside the
    // rest of the suite.
  }, 240_000);
});
