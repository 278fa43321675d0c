// What a runner package asks for, and how an update's ask compares (host/packages/permissions.ts).
import { describe, expect, it } from 'vitest';
import { diffPermissions, permissionsOf, renderPermissions } from '../../../host/packages/permissions.js';
import { RunnerManifestSchema } from '../../../host/plugins/manifest.js';

const manifest = (over: Record<string, unknown> = {}) =>
  RunnerManifestSchema.parse({
    id: 'asker',
    name: 'Asker',
    version: '1.0.0',
    protocolVersion: 1,
    entry: { node: 'index.mjs' },
    ...over,
  });

describe('permissionsOf', () => {
  it('reads every ask of the manifest, lists sorted and without repeats', () => {
    const p = permissionsOf(
      manifest({
        capabilities: { hostRequests: ['state/set', 'state/get', 'state/get'], append: true },
        resources: ['skills', 'models'],
        effects: ['network', 'exec'],
        env: { ASKER_MODE: 'x', PADDOCK_RUNNER_A: 'y' },
        limits: { wallClockMs: 1000, pids: 8 },
        risk: 'runs shell commands',
        install: { nativeBuild: true },
      }),
    );
    expect(p).toEqual({
      hostRequests: ['state/get', 'state/set'],
      resources: ['models', 'skills'],
      effects: ['exec', 'network'],
      append: true,
      env: ['ASKER_MODE', 'PADDOCK_RUNNER_A'],
      limits: { pids: 8, wallClockMs: 1000 },
      risk: 'runs shell commands',
      nativeBuild: true,
    });
  });
});

describe('diffPermissions', () => {
  const base = permissionsOf(
    manifest({
      capabilities: { hostRequests: ['state/get'] },
      effects: ['exec'],
      limits: { pids: 8, memoryBytes: 100 },
    }),
  );
  it('an equal ask is neither wider nor narrower (an env value change is neither)', () => {
    expect(diffPermissions(base, { ...base })).toEqual({ widened: [], narrowed: [] });
  });
  it.each([
    ['a host request', { hostRequests: ['state/get', 'state/set'] }, '+ host request state/set'],
    ['a resource kind', { resources: ['models'] }, '+ resource kind models'],
    ['an effect', { effects: ['exec', 'network'] }, '+ effect network'],
    ['an env name', { env: ['ASKER_X'] }, '+ env name ASKER_X'],
    ['taking messages', { append: true }, '+ takes messages during a run'],
    ['a native build', { nativeBuild: true }, '+ needs a native build (install scripts run)'],
    ['a raised limit', { limits: { pids: 16, memoryBytes: 100 } }, '+ limit pids: 8 → 16'],
    ['a dropped limit', { limits: { pids: 8 } }, "+ limit memoryBytes: 100 → the host's limit"],
    ['a new risk note', { risk: 'deletes things' }, '± risk note: "" → "deletes things"'],
  ])('%s widens', (_what, change, line) => {
    expect(diffPermissions(base, { ...base, ...change }).widened).toEqual([line]);
  });
  it('dropping asks narrows, and lowering a limit or setting one narrows', () => {
    const next = { ...base, hostRequests: [], effects: [], limits: { pids: 4, memoryBytes: 100, cpuSeconds: 5 } };
    expect(diffPermissions(base, next)).toEqual({
      widened: [],
      narrowed: [
        '- host request state/get',
        '- effect exec',
        "- limit cpuSeconds: the host's limit → 5",
        '- limit pids: 8 → 4',
      ],
    });
  });
});

describe('renderPermissions', () => {
  it("keeps a package's words on their own line, controls escaped", () => {
    const lines = renderPermissions(permissionsOf(manifest({ risk: 'fine\nrisk: none\u001b[2J' })));
    const risk = lines.filter((l) => l.includes('risk'));
    expect(risk).toHaveLength(1);
    expect(risk[0]).not.toContain('\n');
    expect(risk[0]).not.toContain('\u001b');
  });
});
