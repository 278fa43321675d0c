import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/fixtures.js';

const SCANNED = ['sdk', 'host', 'runners', 'examples', 'test', 'bench', 'scripts'];

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (name === 'node_modules') return [];
    if (statSync(path).isDirectory()) return tsFiles(path);
    return /\.(ts|mts|js|mjs)$/.test(name) ? [path] : [];
  });
}

/** Every module specifier a file imports or re-exports, statically or dynamically. */
export function importsOf(source: string): string[] {
  const specs: string[] = [];
  const patterns = [/\b(?:import|export)\s[^'"`;]*?\sfrom\s*['"]([^'"]+)['"]/g, /\bimport\s*['"]([^'"]+)['"]/g, /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g];
  for (const pattern of patterns) for (const m of source.matchAll(pattern)) specs.push(m[1]!);
  return specs;
}

/** Repo-relative target of a specifier ('paddock/sdk' maps to sdk/, 'paddock/host' to host/). */
function target(file: string, spec: string): string | undefined {
  if (spec.startsWith('.')) return relative(REPO_ROOT, resolve(dirname(file), spec));
  if (spec === 'paddock/host' || spec.startsWith('paddock/host/')) return 'host/index.ts';
  if (spec.startsWith('paddock/sdk')) return 'sdk/index.ts';
  return undefined;
}

const graph = SCANNED.filter((top) => existsSync(join(REPO_ROOT, top)))
  .flatMap((top) => tsFiles(join(REPO_ROOT, top)))
  .map((file) => ({
  file: relative(REPO_ROOT, file),
  imports: importsOf(readFileSync(file, 'utf8')).map((spec) => ({ spec, to: target(file, spec) })),
}));

describe('import graph (layering invariants)', () => {
  it('sees the imports it checks (the extractor is not vacuous)', () => {
    const serve = graph.find((g) => g.file === 'sdk/runner/serve.ts')!;
    expect(serve.imports.map((i) => i.to)).toContain('sdk/transport/peer.js');
    const hello = graph.find((g) => g.file === 'examples/hello-runner/runner.ts')!;
    expect(hello.imports.map((i) => i.to)).toContain('sdk/index.ts');
    expect(graph.length).toBeGreaterThan(60);
  });

  it('sdk/ never imports host/, runners/, examples/, nor DI', () => {
    const bad = graph
      .filter((g) => g.file.startsWith('sdk/'))
      .flatMap((g) => g.imports.filter((i) => /^(host|runners|examples)\//.test(i.to ?? '') || /tsyringe|reflect-metadata/.test(i.spec)).map((i) => `${g.file} → ${i.spec}`));
    expect(bad).toEqual([]);
  });

  it('runners/ and examples/ import the SDK only, never the host', () => {
    const bad = graph
      .filter((g) => /^(runners|examples)\//.test(g.file))
      .flatMap((g) => g.imports.filter((i) => (i.to ?? '').startsWith('host/')).map((i) => `${g.file} → ${i.spec}`));
    expect(bad).toEqual([]);
  });

  it('nothing imports host/cli/ or host/api/ from outside them', () => {
    const bad = graph.flatMap((g) =>
      g.imports
        .filter((i) => /^host\/(cli|api)\//.test(i.to ?? ''))
        .filter((i) => !g.file.startsWith((i.to ?? '').split('/').slice(0, 2).join('/') + '/'))
        // A process entry that starts the CLI (like bin/paddock.js): the crash tests' host with a store hook.
        .filter(() => g.file !== 'test/fixtures/crashingHost.ts')
        .map((i) => `${g.file} → ${i.spec}`),
    );
    expect(bad).toEqual([]);
  });

  it('only host/di/container.ts imports tsyringe', () => {
    const users = graph.filter((g) => g.imports.some((i) => i.spec === 'tsyringe')).map((g) => g.file);
    expect(users).toEqual(['host/di/container.ts']);
  });
});
