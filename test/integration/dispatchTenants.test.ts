// Tenant isolation of dispatch (docs/http-api.md "Tokens, tenants, roles", docs/security-model.md): routing considers
// only the dispatch's tenant's bindings, the dedupe key and the session key include the tenant, a binding moved to
// another tenant never reaches the old tenant's sessions or binding state. Real store, real dispatcher, a real fixture
// runner (increments-state-counter: it counts its runs in host-owned state).
import { afterAll, describe, expect, it } from 'vitest';
import type { DispatchTicket } from '../../host/dispatch/dispatcher.js';
import { HostError } from '../../host/errors.js';
import { sessionsOfTenant, tenantOfRun, tenantOfSession } from '../../host/state/tenancy.js';
import { chatEvent, tempHost } from '../helpers/host.js';

const host = tempHost();
afterAll(() => host.close());

const counter = { runner: 'increments-state-counter', sandbox: 'process', grants: { state: 'binding' } };
host.apply({
  bindings: [
    // Both tenants route the same telegram bot; beta's route is MORE specific for conversation c1.
    { id: 'acme-bot', tenant: 'acme', ...counter, route: { platform: 'telegram', bot: 'shared' } },
    {
      id: 'beta-bot',
      tenant: 'beta',
      ...counter,
      route: { platform: 'telegram', bot: 'shared', conversation: { id: 'c1' } },
    },
    // The same route as acme-bot, in another tenant: not a conflict (routing is per tenant).
    { id: 'beta-wide', tenant: 'beta', ...counter, route: { platform: 'telegram', bot: 'shared' } },
    // Only beta routes slack events.
    { id: 'beta-only', tenant: 'beta', ...counter, route: { platform: 'slack' } },
  ],
});

const started = (t: DispatchTicket) => {
  if (t.status === 'duplicate') throw new Error('unexpected duplicate');
  return t;
};
const reply = async (t: DispatchTicket) => {
  const outcome = await started(t).done;
  expect(outcome.status).toBe('completed');
  return (outcome.result?.output as { parts: { text: string }[] }).parts[0]!.text;
};
/** The error a dispatch was refused with; a dispatch that was not refused fails the test. */
const refusal = (p: Promise<unknown>): Promise<HostError> =>
  p.then(
    () => {
      throw new Error('expected a refusal');
    },
    (e: unknown) => e as HostError,
  );

describe('dispatch is tenant-scoped', () => {
  it("routes only among the tenant's bindings, even when another tenant's route is more specific", async () => {
    const event = chatEvent({ bot: 'shared', conversation: { id: 'c1' } });
    const acme = started(await host.dispatcher.dispatch(event, {}, { tenant: 'acme' }));
    expect(acme.bindingId).toBe('acme-bot');
    const beta = started(await host.dispatcher.dispatch(chatEvent({ bot: 'shared' }), {}, { tenant: 'beta' }));
    expect(beta.bindingId).toBe('beta-bot');
    await Promise.all([acme.done, beta.done]);
    expect(tenantOfSession(host.store, acme.sessionId)).toBe('acme');
    expect(tenantOfRun(host.store, acme.runId)).toBe('acme');
    expect(tenantOfRun(host.store, beta.runId)).toBe('beta');
    // The session.created event and its audit record carry the tenant.
    expect(host.store.readEvents(acme.sessionId)[0]).toMatchObject({
      type: 'session.created',
      data: { tenant: 'acme', bindingId: 'acme-bot' },
    });
    const created = host.store.audit
      .records({ types: ['session.created'] })
      .find((r) => r.sessionId === beta.sessionId)!;
    expect(created.data).toMatchObject({ tenant: 'beta', bindingId: 'beta-bot' });
  });

  it("refuses no_binding an event only another tenant's binding routes, without naming it", async () => {
    for (const tenant of ['acme', undefined]) {
      const event = chatEvent({ platform: 'slack', bot: 'shared' });
      const error = await refusal(host.dispatcher.dispatch(event, {}, tenant ? { tenant } : {}));
      expect(error).toBeInstanceOf(HostError);
      expect(error.data).toEqual({ reason: 'no_binding' });
      // Nothing of beta's binding (its id, its tenant, that one exists) is in the refusal.
      expect(error.message).not.toMatch(/beta|tenant/);
      expect(error.message).toBe('no binding routes slack/shared/group:c1 (message)');
      const audited = host.store.audit
        .records({ types: ['dispatch.refused'] })
        .find((r) => (r.data as { eventId: string }).eventId === event.id)!;
      expect(audited.data).toMatchObject({ reason: 'no_binding', tenant: tenant ?? 'default', bindingId: null });
    }
    expect(sessionsOfTenant(host.store, 'acme').every((s) => s.bindingId === 'acme-bot')).toBe(true);
    expect(sessionsOfTenant(host.store, 'default')).toEqual([]);
  });

  it("the same event ids in two tenants are two events; a redelivery answers only its own tenant's ids", async () => {
    const event = chatEvent({ id: 'same-id', bot: 'shared', conversation: { id: 'dedupe' } });
    const acme = started(await host.dispatcher.dispatch(event, {}, { tenant: 'acme' }));
    const beta = started(await host.dispatcher.dispatch(event, {}, { tenant: 'beta' }));
    expect(beta.runId).not.toBe(acme.runId);
    expect(beta.sessionId).not.toBe(acme.sessionId);
    expect([acme.bindingId, beta.bindingId]).toEqual(['acme-bot', 'beta-wide']);
    await Promise.all([acme.done, beta.done]);
    for (const [tenant, first] of [
      ['acme', acme],
      ['beta', beta],
    ] as const) {
      const again = await host.dispatcher.dispatch(event, {}, { tenant });
      expect(again).toEqual({
        status: 'duplicate',
        runId: first.runId,
        sessionId: first.sessionId,
        bindingId: first.bindingId,
      });
    }
    // A third tenant with no binding: not a duplicate of either (it would leak their ids), a refusal.
    expect((await refusal(host.dispatcher.dispatch(event, {}, { tenant: 'gamma' }))).data).toEqual({
      reason: 'no_binding',
    });
    expect(host.store.runs({ tenant: 'acme' }).map((r) => r.id)).toContain(acme.runId);
    expect(host.store.runs({ tenant: 'acme' }).map((r) => r.id)).not.toContain(beta.runId);
    expect(host.store.runs({ tenant: 'gamma' })).toEqual([]);
  });

  it('refuses a tenant that is not a tenant name: no folding of case, whitespace or look-alikes', async () => {
    const before = host.store.runs({ limit: 1000 }).length;
    for (const tenant of [
      'Acme',
      'ACME',
      ' acme',
      'acme ',
      'acme\n',
      '\u0430cme',
      'acme\u200b',
      '',
      '-acme',
      'a'.repeat(64),
    ]) {
      const error = await refusal(host.dispatcher.dispatch(chatEvent({ bot: 'shared' }), {}, { tenant }));
      expect(error.code, JSON.stringify(tenant)).toBe('INVALID_INPUT');
      expect(error.data.field).toBe('tenant');
    }
    expect(host.store.runs({ limit: 1000 }).length).toBe(before);
    const audited = host.store.audit
      .records({ types: ['dispatch.refused'] })
      .filter((r) => (r.data as { reason: string }).reason === 'INVALID_INPUT');
    expect(audited.map((r) => (r.data as { tenant: string }).tenant)).toContain('\u0430cme');
  });

  it('a moved binding: old sessions keep the old tenant; the new tenant gets none of its state', async () => {
    const conversation = { id: 'moves' };
    const first = started(
      await host.dispatcher.dispatch(chatEvent({ bot: 'shared', conversation }), {}, { tenant: 'acme' }),
    );
    // acme-bot's binding state in acme already counts the runs above.
    const n = Number((await reply(first)).replace('count: ', ''));
    expect(n).toBeGreaterThanOrEqual(1);
    expect(
      await reply(await host.dispatcher.dispatch(chatEvent({ bot: 'shared', conversation }), {}, { tenant: 'acme' })),
    ).toBe(`count: ${n + 1}`);
    // The admin moves acme-bot to beta (beta-wide gets out of its route's way).
    host.apply({
      bindings: [
        { id: 'acme-bot', tenant: 'beta', ...counter, route: { platform: 'telegram', bot: 'shared' } },
        { id: 'beta-wide', tenant: 'beta', ...counter, route: { platform: 'telegram', bot: 'elsewhere' } },
      ],
    });
    // acme's events no longer route anywhere (acme has no binding left).
    const error = await refusal(
      host.dispatcher.dispatch(chatEvent({ bot: 'shared', conversation }), {}, { tenant: 'acme' }),
    );
    expect(error.data).toEqual({ reason: 'no_binding' });
    // beta's event of the same conversation starts a NEW session, in beta, with empty binding state.
    const moved = started(
      await host.dispatcher.dispatch(chatEvent({ bot: 'shared', conversation }), {}, { tenant: 'beta' }),
    );
    expect(moved.bindingId).toBe('acme-bot');
    expect(moved.sessionId).not.toBe(first.sessionId);
    expect(await reply(moved)).toBe('count: 1');
    expect(tenantOfSession(host.store, first.sessionId)).toBe('acme');
    expect(tenantOfSession(host.store, moved.sessionId)).toBe('beta');
    expect(sessionsOfTenant(host.store, 'acme', { bindingId: 'acme-bot' }).map((s) => s.id)).toContain(first.sessionId);
    expect(sessionsOfTenant(host.store, 'beta', { bindingId: 'acme-bot' }).map((s) => s.id)).not.toContain(
      first.sessionId,
    );
  });
});
