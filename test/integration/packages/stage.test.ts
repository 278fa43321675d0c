// Staging a runner package with npm's own client (docs/runner-packages.md, section 4): from a folder and from a
// tarball, offline, with real npm. Installing must not run any code of the package or of its dependencies.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { classifySpec, stagePackage } from '../../../host/packages/stage.js';
import { emptyFolder } from '../../helpers/packageTree.js';

/**
 * A runner package folder whose every lifecycle script (its own and a local dependency's) would write a marker file
 * into `markers`: install must leave that folder empty.
 */
function hostilePackage(markers: string): string {
  const base = emptyFolder();
  const touch = (name: string) => `node -e "require('fs').writeFileSync('${join(markers, name)}', '')"`;
  const pkg = join(base, 'runner');
  const dep = join(base, 'dep');
  mkdirSync(pkg);
  mkdirSync(dep);
  writeFileSync(
    join(dep, 'package.json'),
    JSON.stringify({ name: 'paddock-test-dep', version: '0.1.0', scripts: { postinstall: touch('dep-postinstall') } }),
  );
  writeFileSync(join(dep, 'index.js'), 'module.exports = 1;\n');
  writeFileSync(
    join(pkg, 'package.json'),
    JSON.stringify({
      name: 'paddock-runner-staged',
      version: '1.2.3',
      keywords: ['paddock-runner'],
      dependencies: { 'paddock-test-dep': `file:${dep}` },
      scripts: Object.fromEntries(
        ['preinstall', 'install', 'postinstall', 'prepare', 'prepack', 'postpack'].map((s) => [s, touch(s)]),
      ),
    }),
  );
  writeFileSync(
    join(pkg, 'runner.json'),
    JSON.stringify({ id: 'staged', name: 'Staged', version: '1.2.3', protocolVersion: 1, entry: { node: 'index.js' } }),
  );
  writeFileSync(join(pkg, 'index.js'), 'require("paddock-test-dep");\n');
  return pkg;
}

describe('stagePackage (real npm, offline)', () => {
  it('names a folder, a tarball and anything else as their sources', () => {
    const dir = emptyFolder();
    writeFileSync(join(dir, 'r-1.0.0.tgz'), '');
    expect(classifySpec(dir)).toEqual({ source: 'folder', npmSpec: dir });
    expect(classifySpec(join(dir, 'r-1.0.0.tgz'))).toEqual({ source: 'tarball', npmSpec: join(dir, 'r-1.0.0.tgz') });
    expect(classifySpec('paddock-runner-x@^1')).toEqual({ source: 'registry', npmSpec: 'paddock-runner-x@^1' });
    expect(classifySpec('@acme/paddock-runner-x')).toEqual({ source: 'registry', npmSpec: '@acme/paddock-runner-x' });
  });

  it('installs a folder with its dependency and runs none of their scripts', async () => {
    const markers = emptyFolder();
    const staging = emptyFolder();
    const staged = await stagePackage(hostilePackage(markers), staging);
    expect(staged).toMatchObject({
      source: 'folder',
      name: 'paddock-runner-staged',
      version: '1.2.3',
      runnerDir: join(staging, 'node_modules', 'paddock-runner-staged'),
      skippedInstallScripts: ['paddock-runner-staged', 'paddock-test-dep'],
    });
    expect(existsSync(join(staged.runnerDir, 'runner.json'))).toBe(true);
    expect(existsSync(join(staging, 'node_modules', 'paddock-test-dep', 'index.js'))).toBe(true);
    expect(readdirSync(markers)).toEqual([]);
  });

  it('installs a tarball made by npm pack, runs none of its scripts, and records no bin links', async () => {
    const markers = emptyFolder();
    const source = hostilePackage(markers);
    const packs = emptyFolder();
    execFileSync('npm', ['pack', '--ignore-scripts', '--pack-destination', packs, source], { stdio: 'ignore' });
    const tarball = join(packs, 'paddock-runner-staged-1.2.3.tgz');
    const staging = emptyFolder();
    const staged = await stagePackage(tarball, staging);
    expect(staged).toMatchObject({ source: 'tarball', name: 'paddock-runner-staged', version: '1.2.3' });
    expect(readdirSync(markers)).toEqual([]);
    expect(existsSync(join(staging, 'node_modules', '.bin'))).toBe(false);
  });

  it("refuses what npm cannot install, with npm's own words", async () => {
    const staging = emptyFolder();
    const notAPackage = emptyFolder();
    await expect(stagePackage(notAPackage, staging)).rejects.toThrow(/npm install failed:[\s\S]*package\.json/);
  });
});
