import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/fixtures.js';
import { layerViolations, type ImportEdge } from '../helpers/layering.js';

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
  const patterns = [
    /\b(?:import|export)\s[^'"`;]*?\sfrom\s*['"]([^'"]+)['"]/g,
    /\bimport\s*['"]([^'"]+)['"]/g,
    /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
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

/** Host-internal imports (host/ → host/ or sdk/), file to file. */
const hostEdges: ImportEdge[] = graph
  .filter((g) => g.file.startsWith('host/'))
  // The DI token registry names every service's type (`import type` only, checked below): a
  // registry, not a dependency, so its edges do not count.
  .filter((g) => g.file !== 'host/di/tokens.ts')
  .flatMap((g) =>
    g.imports.flatMap((i) => (i.to === undefined ? [] : [{ from: g.file, to: i.to.replace(/\.js$/, '.ts') }])),
  );

/**
 * Back edges tolerated for now, each with why it is still here (empty since issue 12 removed the last).
 * Shrink-only: the second layering test fails when an entry no longer matches an edge.
 */
const KNOWN_BACK_EDGES: { key: string; reason: string }[] = [];

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
      .flatMap((g) =>
        g.imports
          .filter((i) => /^(host|runners|examples)\//.test(i.to ?? '') || /tsyringe|reflect-metadata/.test(i.spec))
          .map((i) => `${g.file} → ${i.spec}`),
      );
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
        // The API's own tests and benchmarks serve it from a test server: its callers, not a layer of the host.
        .filter((i) => !(/^host\/api\//.test(i.to ?? '') && /^(test|bench)\//.test(g.file)))
        .map((i) => `${g.file} → ${i.spec}`),
    );
    expect(bad).toEqual([]);
  });

  it('host/di/tokens.ts (exempt from the layer order) imports types only', () => {
    const tokens = readFileSync(join(REPO_ROOT, 'host/di/tokens.ts'), 'utf8');
    expect(tokens.split('\n').filter((l) => /^import\s/.test(l) && !/^import type\s/.test(l))).toEqual([]);
  });

  it('only host/di/container.ts imports tsyringe', () => {
    const users = graph.filter((g) => g.imports.some((i) => i.spec === 'tsyringe')).map((g) => g.file);
    expect(users).toEqual(['host/di/container.ts']);
  });

  it('host/ keeps its layer order: no back edge, no cycle inside a layer, beyond the shrinking allowlist', () => {
    const violations = layerViolations(hostEdges).filter((v) => !KNOWN_BACK_EDGES.some((k) => k.key === v.key));
    expect(violations.map((v) => `${v.kind}: ${v.key} (${v.detail})`)).toEqual([]);
  });

  it('every allowlisted back edge still exists (the list only shrinks: delete an entry once its edge is gone)', () => {
    const keys = new Set(layerViolations(hostEdges).map((v) => v.key));
    expect(KNOWN_BACK_EDGES.filter((k) => !keys.has(k.key)).map((k) => k.key)).toEqual([]);
  });

  it('the layer checker fails on a planted back edge, a planted cycle and an unplaced folder', () => {
    const clean: ImportEdge[] = [
      { from: 'host/cli/main.ts', to: 'host/dispatch/dispatcher.ts' },
      { from: 'host/runs/runService.ts', to: 'host/state/store.ts' },
      { from: 'host/gateway/gateway.ts', to: 'host/bindings/configRepo.ts' },
      { from: 'host/state/store.ts', to: 'sdk/protocol/types.ts' },
    ];
    expect(layerViolations(clean)).toEqual([]);
    const back = layerViolations([...clean, { from: 'host/sandbox/prepare.ts', to: 'host/runs/superviseRun.ts' }]);
    expect(back.map((v) => [v.kind, v.key])).toEqual([
      ['back-edge', 'host/sandbox/prepare.ts → host/runs/superviseRun.ts'],
    ]);
    const cycle = layerViolations([...clean, { from: 'host/bindings/apply.ts', to: 'host/gateway/skills.ts' }]);
    expect(cycle.map((v) => v.kind)).toEqual(['cycle', 'cycle']);
    expect(cycle.map((v) => v.key)).toContain('host/bindings/apply.ts → host/gateway/skills.ts');
    const unplaced = layerViolations([{ from: 'host/runs/a.ts', to: 'host/newFolder/b.ts' }]);
    expect(unplaced.map((v) => v.kind)).toEqual(['unplaced']);
    // And on the real graph: one planted edge is reported, on top of what is there today.
    const planted = layerViolations([...hostEdges, { from: 'host/state/store.ts', to: 'host/dispatch/dispatcher.ts' }]);
    expect(planted.length).toBe(layerViolations(hostEdges).length + 1);
  });
});
