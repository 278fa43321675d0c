// Limits on open SSE streams (per token, per tenant, per server), streams of a token revoked or expired while open,
// and the answer to what Node's HTTP parser refuses — over a real listening server (buildApi on a real store,
// loopback).
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { ApiDeps } from '../../../host/api/deps.js';
import type { Metrics } from '../../../host/api/metrics/metrics.js';
import { buildApi, type ServerOptions } from '../../../host/api/server.js';
import { perTenantCap } from '../../../host/api/streams/streamQuota.js';
import { createApiToken, revokeApiToken } from '../../../host/state/apiTokens.js';
import type { Store } from '../../../host/state/store.js';
import { openSse, type SseClient } from '../../helpers/sse.js';
import { tempStore } from '../../helpers/store.js';

const closers: (() => unknown)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/**
 * The server on a real store; the dispatcher and config are never reached by these routes (named fakes that throw).
 * `metrics` is a recording stand-in for the server's metrics hooks: it tells the test when the server side of a
 * stream has closed (the count goes down on the response's 'close').
 */
async function server(options: ServerOptions = {}) {
  const { store } = tempStore();
  const lines: string[] = [];
  const log = pino(
    { level: 'info' },
    new Writable({ write: (c: Buffer, _e, done) => (lines.push(c.toString()), done()) }),
  );
  let open = 0;
  const waiters: { n: number; resolve: () => void }[] = [];
  const metrics = {
    declareRoute: () => undefined,
    httpRequest: () => undefined,
    sseClients(delta: number) {
      open += delta;
      for (const w of waiters.filter((x) => x.n === open)) w.resolve();
    },
  } as unknown as Metrics;
  const deps = {
    store,
    get dispatcher(): never {
      throw new Error('fake: not used by these routes');
    },
    get config(): never {
      throw new Error('fake: not used by these routes');
    },
    log,
    stopping: () => false,
    metrics,
  } satisfies ApiDeps;
  const app = await buildApi(deps, { rate: { rate: 1000, burst: 1000 }, ...options });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as AddressInfo).port;
  closers.push(
    () => store.close(),
    () => app.close(),
  );
  return {
    store,
    lines,
    port,
    base: `http://127.0.0.1:${port}`,
    /** Resolves when the server holds exactly `n` streams. */
    openStreams: (n: number) => new Promise<void>((resolve) => (open === n ? resolve() : waiters.push({ n, resolve }))),
  };
}

const token = (store: Store, tenant = 'default', expiresAt?: Date) =>
  createApiToken(store, { tenant, role: 'platform', by: 'test', expiresAt }).token;
const idOf = (t: string) => t.split('_')[1]!;
const stream = (base: string, sessionId: string, t: string, lastEventId?: string) =>
  openSse(`${base}/v1/sessions/${sessionId}/events`, {
    headers: { authorization: `Bearer ${t}` },
    ...(lastEventId !== undefined ? { lastEventId } : {}),
  });
/** The body of a refused stream (the helper's parser sees no SSE messages in it: read the raw response instead). */
async function refused(base: string, sessionId: string, t: string) {
  const res = await fetch(`${base}/v1/sessions/${sessionId}/events`, { headers: { authorization: `Bearer ${t}` } });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

describe('caps on open SSE streams', () => {
  it(
    'a token over its cap, then the server over its own, get 429 too_many_streams with Retry-After; ' +
      'a closed stream frees its place',
    async () => {
      // Both tokens are of one tenant whose own cap is out of the way here (above the total; its default: 3).
      const srv = await server({ streams: { perToken: 3, perTenant: 6, total: 5 } });
      const a = token(srv.store);
      const b = token(srv.store);
      const sessionId = srv.store.ensureSession('default', 'b', 'caps').sessionId;
      const held: SseClient[] = [];
      for (let i = 0; i < 3; i++) held.push(await stream(srv.base, sessionId, a));
      expect(held.map((c) => c.status)).toEqual([200, 200, 200]);
      const overToken = await refused(srv.base, sessionId, a);
      expect(overToken.status).toBe(429);
      expect(overToken.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(overToken.headers.get('retry-after')).toBe('5');
      expect(overToken.body).toMatchObject({
        code: 'too_many_streams',
        status: 429,
        scope: 'token',
        limit: 3,
        requestId: overToken.headers.get('x-request-id'),
      });
      // Another token still has room, until the server's total is reached.
      held.push(await stream(srv.base, sessionId, b), await stream(srv.base, sessionId, b));
      expect(held.map((c) => c.status)).toEqual([200, 200, 200, 200, 200]);
      const overServer = await refused(srv.base, sessionId, b);
      expect(overServer.status).toBe(429);
      expect(overServer.body).toMatchObject({ code: 'too_many_streams', scope: 'server', limit: 5 });
      // A client that leaves gives its place back once the server sees its connection close.
      held.shift()!.destroy();
      await srv.openStreams(4);
      const again = await stream(srv.base, sessionId, a);
      expect(again.status).toBe(200);
      await again.waitForCount(1);
      for (const c of [...held, again]) c.destroy();
      await srv.openStreams(0);
    },
  );

  it(
    "the tokens of one tenant together over the tenant's cap get 429 scope tenant; another tenant's token is " +
      'still admitted; a closed stream frees the tenant a place',
    async () => {
      const srv = await server({ streams: { perToken: 2, perTenant: 3, total: 10 } });
      const a1 = token(srv.store, 'acme');
      const a2 = token(srv.store, 'acme');
      const b = token(srv.store, 'beta');
      const acmeSession = srv.store.ensureSession('acme', 'b', 'tenant-cap').sessionId;
      const betaSession = srv.store.ensureSession('beta', 'b', 'tenant-cap').sessionId;
      const held: SseClient[] = [await stream(srv.base, acmeSession, a1), await stream(srv.base, acmeSession, a1)];
      expect((await refused(srv.base, acmeSession, a1)).body).toMatchObject({ scope: 'token', limit: 2 });
      held.push(await stream(srv.base, acmeSession, a2));
      expect(held.map((c) => c.status)).toEqual([200, 200, 200]);
      // a2 holds one stream of its own two, but acme's tokens hold three together: the tenant's cap.
      const overTenant = await refused(srv.base, acmeSession, a2);
      expect(overTenant.status).toBe(429);
      expect(overTenant.headers.get('retry-after')).toBe('5');
      expect(overTenant.body).toMatchObject({ code: 'too_many_streams', status: 429, scope: 'tenant', limit: 3 });
      expect(overTenant.body.detail).toBe(
        'the tokens of this tenant already hold 3 open streams (the most one tenant may); close one first',
      );
      // beta is not behind acme's streams.
      const beta = [await stream(srv.base, betaSession, b), await stream(srv.base, betaSession, b)];
      expect(beta.map((c) => c.status)).toEqual([200, 200]);
      held.shift()!.destroy();
      await srv.openStreams(4);
      const again = await stream(srv.base, acmeSession, a2);
      expect(again.status).toBe(200);
      await again.waitForCount(1);
      for (const c of [...held, ...beta, again]) c.destroy();
      await srv.openStreams(0);
    },
  );

  it('the per-tenant cap defaults to half the server cap, at least the per-token cap', async () => {
    // Half of 6 is 3: a tenant's two tokens (2 + 1) reach it, the server (6) is far.
    const srv = await server({ streams: { perToken: 2, total: 6 } });
    const [a1, a2] = [token(srv.store, 'acme'), token(srv.store, 'acme')];
    const sessionId = srv.store.ensureSession('acme', 'b', 'default-cap').sessionId;
    const held = [
      await stream(srv.base, sessionId, a1),
      await stream(srv.base, sessionId, a1),
      await stream(srv.base, sessionId, a2),
    ];
    expect((await refused(srv.base, sessionId, a2)).body).toMatchObject({ scope: 'tenant', limit: 3 });
    for (const c of held) c.destroy();
    await srv.openStreams(0);
    expect(perTenantCap({ perToken: 16, total: 256, recheckMs: 1000 })).toBe(128);
    expect(perTenantCap({ perToken: 16, total: 20, recheckMs: 1000 })).toBe(16);
    expect(perTenantCap({ perToken: 1, total: 1, recheckMs: 1000 })).toBe(1);
  });

  it('a run stream that ends by itself (its run had ended) frees its place too', async () => {
    const srv = await server({ streams: { perToken: 1, total: 10 } });
    const a = token(srv.store);
    const sessionId = srv.store.ensureSession('default', 'b', 'ended-run').sessionId;
    const runId = 'run_ended';
    srv.store.append(sessionId, [
      { type: 'run.queued', runId, data: { runner: 'r', goalRevision: 0, attempt: 1 } },
      { type: 'run.ended', runId, data: { status: 'completed', reason: 'done', exitCode: 0, signal: null } },
    ]);
    for (let i = 0; i < 3; i++) {
      const c = await openSse(`${srv.base}/v1/runs/${runId}/events`, { headers: { authorization: `Bearer ${a}` } });
      expect(c.status).toBe(200);
      expect(await c.closed).toBe('end');
      await srv.openStreams(0);
    }
  });

  it('caps that are not whole numbers ≥ 1 fail the build', async () => {
    await expect(server({ streams: { perToken: 0 } })).rejects.toThrow(/perToken must be a whole number/);
    await expect(server({ streams: { total: 1.5 } })).rejects.toThrow(/total must be a whole number/);
    await expect(server({ streams: { perTenant: 0 } })).rejects.toThrow(/perTenant must be a whole number/);
  });
});

describe('streams of a token that stops being valid', () => {
  it('revoking the token ends its open streams within the recheck interval; the resume is 401 revoked', async () => {
    const srv = await server({ streams: { recheckMs: 50 } });
    const a = token(srv.store);
    const other = token(srv.store);
    const sessionId = srv.store.ensureSession('default', 'b', 'revoked').sessionId;
    const streams = [await stream(srv.base, sessionId, a), await stream(srv.base, sessionId, a)];
    const kept = await stream(srv.base, sessionId, other);
    for (const c of [...streams, kept]) await c.waitForCount(1);
    const t = performance.now();
    revokeApiToken(srv.store, idOf(a), 'test');
    expect(await Promise.all(streams.map((c) => c.closed))).toEqual(['end', 'end']);
    const ms = performance.now() - t;
    // The bound is one interval (50 ms) plus the event loop's delay; generous for a loaded machine.
    expect(ms).toBeLessThan(2000);
    await srv.openStreams(1);
    // The other token's stream is untouched and still live.
    srv.store.append(sessionId, [{ type: 'session.resumed', data: { by: 'user:ada' } }]);
    await kept.waitForCount(2);
    const resumed = await fetch(`${srv.base}/v1/sessions/${sessionId}/events`, {
      headers: { authorization: `Bearer ${a}`, 'last-event-id': streams[0]!.messages.at(-1)!.id },
    });
    expect(resumed.status).toBe(401);
    expect(await resumed.json()).toMatchObject({ code: 'unauthorized', reason: 'revoked' });
    kept.destroy();
    await srv.openStreams(0);
  });

  it('a token that expires while its stream is open: the stream ends after the expiry', async () => {
    const srv = await server({ streams: { recheckMs: 50 } });
    const expiresAt = new Date(Date.now() + 400);
    const a = token(srv.store, 'default', expiresAt);
    const sessionId = srv.store.ensureSession('default', 'b', 'expired').sessionId;
    const c = await stream(srv.base, sessionId, a);
    expect(c.status).toBe(200);
    await c.waitForCount(1);
    expect(await c.closed).toBe('end');
    expect(Date.now()).toBeGreaterThanOrEqual(expiresAt.getTime());
    await srv.openStreams(0);
  });
});

/**
 * Send raw bytes on a new connection; each later part only once the server's answer so far contains `after` (a
 * kept-alive connection's next request); resolves with everything the server sent before it closed.
 */
function raw(port: number, first: string, next?: { after: string; bytes: string }): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    let sent = false;
    socket.on('data', (chunk) => {
      text += chunk.toString();
      if (next && !sent && text.includes(next.after)) {
        sent = true;
        socket.write(next.bytes);
      }
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(text));
    socket.write(first);
  });
}
function parse(response: string) {
  const [head, body] = response.split('\r\n\r\n', 2) as [string, string];
  const [status, ...headerLines] = head.split('\r\n');
  const headers = Object.fromEntries(
    headerLines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
  );
  return { status: status!, headers, body: JSON.parse(body) as Record<string, unknown> };
}

describe('requests the HTTP parser refuses', () => {
  it('headers over 16 KiB get a 431 problem+json with a request id (logged); the connection is closed', async () => {
    const srv = await server();
    const r = parse(await raw(srv.port, `GET /healthz HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`));
    expect(r.status).toBe('HTTP/1.1 431 Request Header Fields Too Large');
    expect(r.headers['content-type']).toBe('application/problem+json');
    expect(r.headers.connection).toBe('close');
    expect(r.body).toMatchObject({
      type: 'https://paddock.dev/problems/headers_too_large',
      status: 431,
      code: 'headers_too_large',
      requestId: r.headers['x-request-id'],
    });
    expect(r.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(srv.lines.join('')).toContain(`"requestId":"${r.headers['x-request-id']}"`);
  });

  it('bytes that are not HTTP get a 400 invalid_request naming the parser error, never the bytes', async () => {
    const srv = await server();
    const r = parse(await raw(srv.port, 'CANARY\x01 /x HTTP/1.1\r\n\r\n'));
    expect(r.status).toBe('HTTP/1.1 400 Bad Request');
    expect(r.body).toMatchObject({ code: 'invalid_request', status: 400, requestId: r.headers['x-request-id'] });
    expect((r.body.errors as { message: string }[])[0]!.message).toMatch(/\(HPE_[A-Z_]+\)$/);
    expect(JSON.stringify(r.body)).not.toContain('CANARY');
  });

  it('on a kept-alive connection, a good request is answered, then an oversized one gets its 431', async () => {
    const srv = await server();
    const text = await raw(srv.port, 'GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n', {
      after: '{"status":"ok"}',
      bytes: `GET /healthz HTTP/1.1\r\nhost: x\r\nx-big: ${'b'.repeat(20_000)}\r\n\r\n`,
    });
    expect(text.startsWith('HTTP/1.1 200 OK')).toBe(true);
    const second = text.slice(text.indexOf('HTTP/1.1 431'));
    expect(parse(second).body).toMatchObject({ code: 'headers_too_large' });
  });
});
