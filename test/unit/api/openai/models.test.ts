import { describe, expect, it } from 'vitest';
import { modelList, reachableBinding } from '../../../../host/api/openai/models.js';
import type { Binding } from '../../../../host/bindings/schema.js';

const binding = (id: string, route: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  ({
    id,
    enabled: true,
    route: { conversation: {}, eventTypes: ['message'], ...route },
    ...extra,
  }) as unknown as Binding;

describe('which bindings the OpenAI endpoint reaches', () => {
  const bindings = [
    binding('a', { platform: 'openai', bot: 'a' }),
    binding('catch-all', {}),
    binding('wide', { platform: 'openai' }), // outranks the catch-all for every openai event
    binding('tg', { platform: 'telegram' }),
    binding('group-only', { platform: 'openai', bot: 'group-only', conversation: { type: 'group' } }),
    binding('one-conv', { platform: 'openai', bot: 'one-conv', conversation: { id: 'probe' } }),
    binding('off', { platform: 'openai', bot: 'off' }, { enabled: false }),
    binding('other-tenant', { platform: 'openai', bot: 'other-tenant' }, { tenant: 'acme' }),
    binding('commands', { platform: 'openai', bot: 'commands', eventTypes: ['command'] }),
  ];

  it('a binding routing says takes its own openai events; never one answering for another', () => {
    expect(reachableBinding(bindings, 'default', 'a')?.id).toBe('a');
    expect(reachableBinding(bindings, 'default', 'tg')).toBeUndefined();
    expect(reachableBinding(bindings, 'default', 'group-only')).toBeUndefined();
    expect(reachableBinding(bindings, 'default', 'one-conv')).toBeUndefined();
    expect(reachableBinding(bindings, 'default', 'commands')).toBeUndefined();
    expect(reachableBinding(bindings, 'default', 'nope')).toBeUndefined();
    expect(reachableBinding(bindings, 'default', 'wide')?.id).toBe('wide');
    // Routing would give model "catch-all" to "wide": the catch-all is not reachable under its own name.
    expect(reachableBinding(bindings, 'default', 'catch-all')).toBeUndefined();
  });

  it('tenants see only their own bindings', () => {
    expect(reachableBinding(bindings, 'default', 'other-tenant')).toBeUndefined();
    expect(reachableBinding(bindings, 'acme', 'other-tenant')?.id).toBe('other-tenant');
    expect(reachableBinding(bindings, 'acme', 'a')).toBeUndefined();
    expect(modelList(bindings, 'acme', () => 7)).toEqual({
      object: 'list',
      data: [{ id: 'other-tenant', object: 'model', created: 7, owned_by: 'paddock:acme' }],
    });
  });

  it('lists enabled reachable bindings, sorted', () => {
    const ids = modelList(bindings, 'default', () => 0).data.map((m) => m.id);
    expect(ids).toContain('a');
    expect(ids).not.toContain('off');
    expect(ids).not.toContain('tg');
    expect(ids).toEqual([...ids].sort());
  });
});

describe('the model list of a tenant with many bindings', () => {
  // The rule, as it was written before it was made linear: each binding routed among all the tenant's bindings.
  const reference = (bindings: readonly Binding[], tenant: string) =>
    bindings
      .filter((b) => b.enabled && reachableBinding(bindings, tenant, b.id) === b)
      .map((b) => b.id)
      .sort();

  it('lists what routing each binding among all of them lists, for random tenants of bindings', () => {
    let seed = 13;
    const pick = <T>(xs: readonly T[]): T => xs[(seed = (seed * 1103515245 + 12345) % 2 ** 31) % xs.length]!;
    for (let round = 0; round < 200; round++) {
      const ids = ['a', 'b', 'c', 'd', 'e', 'f'];
      const bindings = Array.from({ length: 12 }, (_, i) =>
        binding(
          `${pick(ids)}${i % 3 === 0 ? '' : i}`,
          {
            ...pick([{}, { platform: 'openai' }, { platform: 'telegram' }]),
            ...pick([{}, { bot: pick(ids) }, { bot: `${pick(ids)}${i}` }]),
            conversation: pick([{}, { type: 'private' }, { type: 'group' }, { id: 'probe' }, { id: 'x' }]),
            eventTypes: pick([['message'], ['command'], ['message', 'command']]),
          },
          { enabled: pick([true, true, false]), ...pick([{}, { tenant: 'acme' }]) },
        ),
      );
      for (const tenant of ['default', 'acme'])
        expect(modelList(bindings, tenant, () => 0).data.map((m) => m.id)).toEqual(reference(bindings, tenant));
    }
  });

  it('takes one match per binding, not one over every binding per binding', () => {
    const many = Array.from({ length: 15_000 }, (_, i) => binding(`m-${i}`, { platform: 'openai', bot: `m-${i}` }));
    const start = performance.now();
    expect(modelList(many, 'default', () => 0).data).toHaveLength(15_000);
    // The quadratic rule took 3.4 s here (the whole server blocked); now ~0.1 s.
    expect(performance.now() - start).toBeLessThan(1500);
  });
});
