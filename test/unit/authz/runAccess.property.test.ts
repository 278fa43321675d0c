import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { indexResources, resolveRunAccess } from '../../../host/authz/runAccess.js';
import { BindingSchema, ConfigFileSchema } from '../../../host/bindings/schema.js';
import { parseLimits } from '../../../host/config/limits.js';
import { RESOURCE_KINDS, RunnerManifestSchema } from '../../../host/plugins/manifest.js';
import { HOST_METHOD_NAMES } from '../../../sdk/protocol/methods.js';

const ids = ['a', 'b', 'c', 'd'];
const tools = ['t1', 't2', 't3', 't4'];
const subset = <T>(items: readonly T[]) => fc.subarray([...items]);
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });

const manifestArb = fc
  .record({
    hostRequests: subset(HOST_METHOD_NAMES),
    resources: subset(RESOURCE_KINDS),
    wall: maybe(fc.integer({ min: 1, max: 10_000_000 })),
  })
  .map((m) =>
    RunnerManifestSchema.parse({
      id: 'r',
      name: 'r',
      version: '1',
      protocolVersion: 1,
      entry: { node: 'index.ts' },
      capabilities: { hostRequests: m.hostRequests },
      resources: m.resources,
      ...(m.wall ? { limits: { wallClockMs: m.wall } } : {}),
    }),
  );

const resourcesArb = fc
  .record({
    models: subset(ids),
    knowledgeBases: subset(ids),
    mcpServers: fc.array(fc.record({ id: fc.constantFrom(...ids), allow: maybe(subset(tools)), deny: subset(tools) }), {
      maxLength: 4,
    }),
    skills: subset(ids),
    artifacts: subset(ids),
    mounts: subset(ids),
  })
  .map(
    (r) =>
      ConfigFileSchema.parse({
        resources: {
          models: r.models.map((id) => ({
            id,
            provider: 'anthropic',
            model: `model-${id}`,
            baseUrl: `https://secret-host-${id}.example`,
            apiKey: { env: `SECRET_ENV_${id.toUpperCase()}` },
          })),
          knowledgeBases: r.knowledgeBases.map((id) => ({ id, path: `/srv/secret-kb-${id}` })),
          mcpServers: [...new Map(r.mcpServers.map((s) => [s.id, s])).values()].map((s) => ({
            id: s.id,
            command: `/opt/secret-mcp-${s.id}`,
            tools: { ...(s.allow ? { allow: s.allow } : {}), deny: s.deny },
          })),
          skills: r.skills.map((id) => ({ id, name: `skill-${id}`, path: `/srv/secret-skill-${id}` })),
          artifacts: r.artifacts.map((id) => ({ id, name: `artifact-${id}`, path: `/srv/secret-artifact-${id}` })),
          mounts: r.mounts.map((id) => ({ id, path: `/srv/secret-mount-${id}`, mode: 'ro' })),
        },
      }).resources,
  );

const bindingArb = fc
  .record({
    state: fc.constantFrom('none', 'session', 'binding'),
    fs: fc.constantFrom('none', 'read', 'readwrite'),
    approval: fc.boolean(),
    models: subset(ids),
    knowledgeBases: subset(ids),
    mcp: fc.array(fc.record({ id: fc.constantFrom(...ids), tools: maybe(subset(tools)) }), { maxLength: 4 }),
    skills: subset(ids),
    artifacts: subset(ids),
    mounts: subset(ids),
    wall: maybe(fc.integer({ min: 1, max: 10_000_000 })),
  })
  .map((g) =>
    BindingSchema.parse({
      id: 'b',
      runner: 'r',
      grants: {
        state: g.state,
        fs: g.fs,
        approval: g.approval,
        models: g.models,
        knowledgeBases: g.knowledgeBases,
        mcpServers: [...new Map(g.mcp.map((m) => [m.id, m])).values()].map((m) =>
          m.tools ? { id: m.id, tools: m.tools } : m.id,
        ),
        skills: g.skills,
        artifacts: g.artifacts,
        mounts: g.mounts,
      },
      ...(g.wall ? { limits: { wallClockMs: g.wall } } : {}),
    }),
  );

const hostLimits = parseLimits();

describe('access (property)', () => {
  it(
    'never contains anything outside manifest requests ∩ binding grants ∩ existing resources, and never a ' +
      'secret or host path',
    () => {
      fc.assert(
        fc.property(manifestArb, resourcesArb, bindingArb, (manifest, resources, binding) => {
          const p = resolveRunAccess(manifest, binding, indexResources(resources), hostLimits);
          const g = binding.grants;
          const exists = (kind: keyof typeof resources, id: string) => resources[kind].some((r) => r.id === id);
          for (const kind of ['models', 'knowledgeBases', 'skills', 'artifacts', 'mounts'] as const) {
            for (const handle of p[kind]) {
              expect(manifest.resources).toContain(kind);
              expect(g[kind]).toContain(handle.id);
              expect(exists(kind, handle.id)).toBe(true);
            }
          }
          const mcpGrants = new Map(
            g.mcpServers.map((m) => (typeof m === 'string' ? [m, undefined] : [m.id, m.tools])),
          );
          for (const s of p.mcpServers) {
            expect(manifest.resources).toContain('mcpServers');
            expect(mcpGrants.has(s.id)).toBe(true);
            const server = resources.mcpServers.find((r) => r.id === s.id)!;
            expect(s.deniedTools).toEqual(server.tools.deny);
            if (s.allowedTools === undefined) {
              expect(server.tools.allow).toBeUndefined();
              expect(mcpGrants.get(s.id)).toBeUndefined();
            } else {
              for (const t of s.allowedTools) {
                expect(server.tools.deny).not.toContain(t);
                if (server.tools.allow) expect(server.tools.allow).toContain(t);
                const granted = mcpGrants.get(s.id);
                if (granted) expect(granted).toContain(t);
              }
            }
          }
          for (const method of p.hostRequests) {
            expect(manifest.capabilities.hostRequests).toContain(method);
            if (method.startsWith('state/')) expect(g.state).not.toBe('none');
            if (method === 'fs/read') expect(g.fs).not.toBe('none');
            if (method === 'fs/write') expect(g.fs).toBe('readwrite');
            if (method === 'approval/request') expect(g.approval).toBe(true);
            if (method === 'model/complete') expect(p.models.length).toBeGreaterThan(0);
            if (method === 'kb/retrieve') expect(p.knowledgeBases.length).toBeGreaterThan(0);
            if (method === 'tool/call') expect(p.mcpServers.length).toBeGreaterThan(0);
          }
          for (const key of [
            'wallClockMs',
            'idleMs',
            'maxUpdates',
            'maxEventBytes',
            'maxStdoutBytes',
            'maxStderrBytes',
          ] as const) {
            expect(p.limits[key]).toBeLessThanOrEqual(hostLimits[key]);
          }
          const { withheld: _w, ...handed } = p;
          expect(JSON.stringify(handed)).not.toMatch(/secret|SECRET_ENV|example/);
        }),
        { numRuns: 500 },
      );
    },
  );
});

describe('access limits', () => {
  it('binding limits win over the manifest defaults, and the host limit caps both', () => {
    const manifest = RunnerManifestSchema.parse({
      id: 'r',
      name: 'r',
      version: '1',
      protocolVersion: 1,
      entry: { node: 'i.ts' },
      limits: { wallClockMs: 60_000, idleMs: 5_000 },
    });
    const empty = indexResources(ConfigFileSchema.parse({}).resources);
    const host = parseLimits({ wallClockMs: 100_000, idleMs: 50_000 });
    const plain = resolveRunAccess(manifest, BindingSchema.parse({ id: 'b', runner: 'r' }), empty, host);
    expect([plain.limits.wallClockMs, plain.limits.idleMs]).toEqual([60_000, 5_000]);
    const own = resolveRunAccess(
      manifest,
      BindingSchema.parse({ id: 'b', runner: 'r', limits: { wallClockMs: 90_000, idleMs: 999_999 } }),
      empty,
      host,
    );
    expect([own.limits.wallClockMs, own.limits.idleMs]).toEqual([90_000, 50_000]);
    expect(own.requestLimits).toEqual({ requestsPerSecond: 50, maxRequests: 10_000, maxRequestBytes: 1024 * 1024 });
  });
});
