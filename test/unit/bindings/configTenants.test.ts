// Tenants in paddock.yaml: every resource and binding has one (default `default`), a binding grants only resources of
// its own tenant (apply refuses, naming each field, all at once), names are never folded, routes conflict only within
// a tenant, and explain shows the tenant (docs/admin-guide.md, "Tenants").
import { describe, expect, it } from 'vitest';
import { ConfigRepo } from '../../../host/bindings/configRepo.js';
import { explainBinding, renderExplanation } from '../../../host/bindings/explain.js';
import { BindingSchema, type Binding } from '../../../host/bindings/schema.js';
import { validateConfig, type ConfigProblem } from '../../../host/bindings/validateConfig.js';
import { parseLimits } from '../../../host/config/limits.js';
import { HostError } from '../../../host/errors.js';
import { discoverRunners } from '../../../host/plugins/catalog.js';
import { FIXTURE_RUNNERS, tempHost } from '../../helpers/host.js';

const context = { catalog: discoverRunners([FIXTURE_RUNNERS]), mountRoots: [] as string[], source: 'paddock.yaml' };

function problemsOf(raw: unknown): string[] {
  try {
    validateConfig(raw, context);
  } catch (error) {
    expect((error as HostError).code).toBe('CONFIG_INVALID');
    return ((error as HostError).data.problems as ConfigProblem[]).map((p) => `${p.field}: ${p.message}`);
  }
  throw new Error('the configuration validated');
}

const scripted = (id: string, tenant?: string) => ({
  id,
  provider: 'scripted',
  model: 'x',
  ...(tenant !== undefined ? { tenant } : {}),
});

describe('tenants in paddock.yaml', () => {
  it('defaults every resource and binding to the tenant "default"', () => {
    const file = validateConfig(
      {
        resources: { models: [scripted('m')], mcpServers: [{ id: 's', command: 'x' }] },
        bindings: [{ id: 'b', runner: 'echo', grants: { models: ['m'], mcpServers: ['s'] } }],
      },
      context,
    );
    expect(file.resources.models[0]!.tenant).toBe('default');
    expect(file.resources.mcpServers[0]!.tenant).toBe('default');
    expect(file.bindings[0]!.tenant).toBe('default');
  });

  it("refuses every grant of another tenant's resource, naming each field, together with the other problems", () => {
    const problems = problemsOf({
      resources: {
        models: [scripted('mine', 'a'), scripted('m', 'b')],
        mcpServers: [{ id: 'tools', tenant: 'b', command: 'x' }],
      },
      bindings: [
        {
          id: 'bot',
          tenant: 'a',
          runner: 'echo',
          grants: { models: ['mine', 'm'], mcpServers: [{ id: 'tools', tools: ['t'] }] },
        },
        // A resource of the default tenant is another tenant's too.
        { id: 'other', tenant: 'a', runner: 'echo', route: { bot: 'o' }, grants: { models: ['nope'] } },
      ],
    });
    expect(problems).toEqual([
      'bindings[0].grants.models[1]: model "m" belongs to tenant "b", this binding to tenant "a"',
      'bindings[0].grants.mcpServers[0]: mcpServer "tools" belongs to tenant "b", this binding to tenant "a"',
      'bindings[1].grants.models[0]: no models resource "nope"',
    ]);
  });

  it("a resource referenced by two tenants' bindings is refused for the one it does not belong to", () => {
    expect(
      problemsOf({
        resources: { models: [scripted('shared', 'a')] },
        bindings: [
          { id: 'ba', tenant: 'a', runner: 'echo', route: { bot: 'x' }, grants: { models: ['shared'] } },
          { id: 'bb', tenant: 'b', runner: 'echo', route: { bot: 'x' }, grants: { models: ['shared'] } },
          // The default tenant (no tenant field) is not a wildcard either.
          { id: 'bd', runner: 'echo', route: { bot: 'y' }, grants: { models: ['shared'] } },
        ],
      }),
    ).toEqual([
      'bindings[1].grants.models[0]: model "shared" belongs to tenant "a", this binding to tenant "b"',
      'bindings[2].grants.models[0]: model "shared" belongs to tenant "a", this binding to tenant "default"',
    ]);
  });

  it('refuses tenant names that are not one: no folding of case, whitespace, unicode look-alikes or length', () => {
    const bad = [
      'Acme',
      ' acme',
      'acme ',
      'acme\n',
      '\u0430cme',
      'acme\u200b',
      '',
      '-acme',
      '_acme',
      'a'.repeat(64),
      'a.b',
    ];
    const problems = problemsOf({
      resources: { models: bad.map((tenant, i) => scripted(`m${i}`, tenant)) },
      bindings: bad.map((tenant, i) => ({ id: `b${i}`, tenant, runner: 'echo', route: { bot: `x${i}` } })),
    });
    for (const [i] of bad.entries()) {
      expect(problems.some((p) => p.startsWith(`resources.models[${i}].tenant: a tenant name`))).toBe(true);
      expect(problems.some((p) => p.startsWith(`bindings[${i}].tenant: a tenant name`))).toBe(true);
    }
    expect(problems).toHaveLength(bad.length * 2);
    // The longest and the shortest valid names pass.
    validateConfig(
      {
        bindings: [
          { id: 'b', tenant: `a${'-'.repeat(62)}`, runner: 'echo' },
          { id: 'c', tenant: '0', runner: 'echo' },
        ],
      },
      context,
    );
  });

  it('two tenants may route the same events; two enabled bindings of one tenant still may not', () => {
    const route = { platform: 'telegram', bot: 'shared' };
    validateConfig(
      {
        bindings: [
          { id: 'a', tenant: 'a', runner: 'echo', route },
          { id: 'b', tenant: 'b', runner: 'echo', route },
        ],
      },
      context,
    );
    expect(
      problemsOf({
        bindings: [
          { id: 'a1', tenant: 'a', runner: 'echo', route },
          { id: 'a2', tenant: 'a', runner: 'echo', route },
          { id: 'b', tenant: 'b', runner: 'echo', route },
        ],
      }),
    ).toEqual(['bindings[0].route: binding "a1" has the same route as "a2"; one event could not choose between them']);
  });

  it('apply refuses a cross-tenant grant and changes nothing; a kept stored resource is checked too', () => {
    const host = tempHost();
    try {
      host.apply({ resources: { models: [scripted('bm', 'b')] } });
      const before = new ConfigRepo(host.store).list().length;
      let error: unknown;
      try {
        // The file does not list bm: the stored one (tenant b) is merged in and checked.
        host.apply({ bindings: [{ id: 'bot', tenant: 'a', runner: 'echo', grants: { models: ['bm'] } }] });
      } catch (e) {
        error = e;
      }
      expect((error as HostError).code).toBe('CONFIG_INVALID');
      expect((error as HostError).message).toBe(
        'bindings[0].grants.models[0]: model "bm" belongs to tenant "b", this binding to tenant "a"',
      );
      expect(new ConfigRepo(host.store).list()).toHaveLength(before);
      // Moving the binding to the resource's tenant is accepted, and stored with its tenant.
      host.apply({ bindings: [{ id: 'bot', tenant: 'b', runner: 'echo', grants: { models: ['bm'] } }] });
      expect(new ConfigRepo(host.store).binding('bot').spec.tenant).toBe('b');
    } finally {
      void host.close();
    }
  });

  it("explain shows the binding's tenant and computes access from its own tenant's resources only", () => {
    const binding: Binding = BindingSchema.parse({
      id: 'b',
      tenant: 'a',
      runner: 'calls-gateway',
      sandbox: 'process',
      grants: { models: ['m'] },
    });
    const explain = (modelTenant: string) =>
      explainBinding(
        binding,
        context.catalog,
        {
          models: [{ ...scripted('m', modelTenant), maxRetries: 0, timeoutMs: 1000 } as never],
          knowledgeBases: [],
          mcpServers: [],
          skills: [],
          artifacts: [],
          mounts: [],
        },
        parseLimits(),
        { dataDir: '/tmp/x', harnessDir: '/tmp/h', mountRoots: [] },
      );
    const own = explain('a');
    expect(own.binding.tenant).toBe('a');
    expect(renderExplanation(own).split('\n')[0]).toBe('binding b (enabled) · tenant a → runner calls-gateway');
    expect(own.access!.models.map((m) => m.id)).toEqual(['m']);
    // A store holding a cross-tenant grant (apply refuses one) still gives the run nothing of the other tenant.
    const foreign = explain('b');
    expect(foreign.access!.models).toEqual([]);
    expect(foreign.withheld).toContainEqual({ what: 'models: m', why: 'the resource does not exist (any more)' });
  });
});
