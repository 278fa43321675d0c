import Fastify from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import { afterEach, describe, expect, it } from 'vitest';
import { webhooksRoutes } from '../../../host/api/routes/webhooks.js';
import { tempStore } from '../../helpers/store.js';

const closers: (() => unknown)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** The routes on a Fastify instance; a stand-in auth hook (the server lane's is not here) reads `x-as`. */
async function app() {
  const { store } = tempStore();
  const server = Fastify();
  server.setValidatorCompiler(validatorCompiler);
  server.setSerializerCompiler(serializerCompiler);
  server.addHook('onRequest', async (request) => {
    const [tenant, role] = String(request.headers['x-as']).split('/');
    Object.assign(request, { principal: { tokenId: `tok-${tenant}`, tenant, role } });
  });
  webhooksRoutes(server, { store });
  await server.ready();
  closers.push(
    () => store.close(),
    () => server.close(),
  );
  const call = (as: string, method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) =>
    server.inject({ method, url, payload, headers: { 'x-as': as } });
  return { call, store };
}

describe('webhook routes', () => {
  it('register answers the secret once; list, deliveries and delete stay in the tenant', async () => {
    const { call } = await app();
    const created = await call('acme/platform', 'POST', '/v1/webhooks', {
      url: 'http://127.0.0.1:9/h',
      events: ['reply'],
    });
    expect(created.statusCode).toBe(201);
    const hook = created.json() as { id: string; secret: string };
    expect(hook).toMatchObject({
      tenant: 'acme',
      url: 'http://127.0.0.1:9/h',
      events: ['reply'],
      createdBy: 'token:tok-acme',
    });
    expect(hook.secret).toMatch(/^whsec_/);
    const listed = await call('acme/admin', 'GET', '/v1/webhooks');
    expect(listed.json()).toEqual({ webhooks: [expect.objectContaining({ id: hook.id })] });
    expect(listed.body).not.toContain(hook.secret);
    expect((await call('other/admin', 'GET', '/v1/webhooks')).json()).toEqual({ webhooks: [] });
    expect((await call('acme/platform', 'GET', `/v1/webhooks/${hook.id}/deliveries`)).json()).toEqual({
      deliveries: [],
    });
    for (const [method, url] of [
      ['GET', `/v1/webhooks/${hook.id}/deliveries`],
      ['DELETE', `/v1/webhooks/${hook.id}`],
    ] as const) {
      const other = await call('other/admin', method, url);
      expect(other.statusCode).toBe(404);
      expect(other.json()).toMatchObject({ code: 'not_found', detail: `no webhook ${hook.id}` });
    }
    expect((await call('acme/platform', 'DELETE', `/v1/webhooks/${hook.id}`)).statusCode).toBe(204);
    expect((await call('acme/platform', 'DELETE', `/v1/webhooks/${hook.id}`)).statusCode).toBe(404);
  });

  it('refuses an approver, a non-http URL (naming the field) and unknown events', async () => {
    const { call } = await app();
    const approver = await call('acme/approver', 'POST', '/v1/webhooks', { url: 'http://127.0.0.1/' });
    expect(approver.statusCode).toBe(403);
    expect(approver.json()).toMatchObject({ code: 'forbidden', role: 'approver', requiredRole: ['platform', 'admin'] });
    const file = await call('acme/platform', 'POST', '/v1/webhooks', { url: 'file:///etc/passwd' });
    expect(file.statusCode).toBe(400);
    expect(file.headers['content-type']).toContain('application/problem+json');
    expect(file.json()).toMatchObject({
      code: 'invalid_request',
      errors: [{ path: 'url', message: "the URL's scheme must be http or https, not file" }],
    });
    expect((await call('acme/platform', 'POST', '/v1/webhooks', { url: 'http://a/', events: ['x'] })).statusCode).toBe(
      400,
    );
    expect((await call('acme/platform', 'GET', '/v1/webhooks')).json()).toEqual({ webhooks: [] });
  });
});
