// The stream mounted on Fastify the way the server's routes mount it: validate, hijack, serve on reply.raw.
import Fastify from 'fastify';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { EventStreams, parseStartSeq } from '../../../../host/api/streams/index.js';
import { openSse } from '../../../helpers/sse.js';
import { tempStore } from '../../../helpers/store.js';

describe('SSE on Fastify', () => {
  it('a hijacked reply streams the session; a bad start is answered by the route; close ends the streams', async () => {
    const { store } = tempStore();
    const streams = new EventStreams(store);
    const app = Fastify();
    app.get<{ Params: { id: string }; Querystring: { after?: string } }>(
      '/v1/sessions/:id/events',
      async (request, reply) => {
        const start = parseStartSeq({ lastEventId: request.headers['last-event-id'], after: request.query.after });
        if (!start.ok) return reply.code(400).send({ code: 'invalid_request', errors: start.errors });
        reply.hijack();
        streams.serve(
          reply.raw,
          { sessionId: request.params.id, afterSeq: start.afterSeq },
          { 'x-request-id': request.id },
        );
      },
    );
    // preClose: Fastify's close waits for open connections before onClose hooks, and a stream never goes idle.
    app.addHook('preClose', async () => streams.endAll());
    await app.listen({ host: '127.0.0.1', port: 0 });
    const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    const sessionId = store.ensureSession('default', 'b', 'fastify').sessionId;
    const c = await openSse(`${base}/v1/sessions/${sessionId}/events`);
    expect(c.status).toBe(200);
    expect(c.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(c.headers['x-request-id']).toBe('req-1');
    store.append(sessionId, [{ type: 'session.resumed', data: { by: 'user:ada' } }]);
    await c.waitForCount(2);
    expect(c.messages.map((m) => m.event)).toEqual(['session.created', 'session.resumed']);
    const bad = await fetch(`${base}/v1/sessions/${sessionId}/events?after=x`);
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({
      code: 'invalid_request',
      errors: [{ path: 'query.after', message: 'must be decimal digits (a seq)' }],
    });
    await app.close();
    expect(await c.closed).toBe('end');
    expect(streams.clients).toBe(0);
    store.close();
  });
});
