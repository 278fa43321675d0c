// The server's error paths that a real host cannot produce on demand, with named fakes for the host: a store that
// fails unexpectedly, and a server that is stopping.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { ApiDeps } from '../../../host/api/deps.js';
import { buildApi } from '../../../host/api/server.js';

/** Fake deps: a store whose every use throws an unexpected error carrying a canary, and a captured log. */
function failingHost(stopping = false) {
  const lines: string[] = [];
  const log = pino(
    { level: 'info' },
    new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    }),
  );
  const deps = {
    get store(): never {
      throw new Error('CANARY-internal /var/secret/path');
    },
    get dispatcher(): never {
      throw new Error('unused');
    },
    get config(): never {
      throw new Error('unused');
    },
    log,
    stopping: () => stopping,
  } satisfies ApiDeps;
  return { deps, lines };
}

describe('server error paths', () => {
  it('an unexpected error is a 500 problem with no message or stack; the log has it under the request id', async () => {
    const { deps, lines } = failingHost();
    const app = await buildApi(deps);
    const r = await app.inject({
      method: 'GET',
      url: '/v1/runs/run_1',
      headers: { authorization: 'Bearer pdk_000000000000_' + 'A'.repeat(43), 'x-request-id': 'boom-1' },
    });
    expect(r.statusCode).toBe(500);
    expect(r.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(r.headers['x-request-id']).toBe('boom-1');
    expect(r.json()).toMatchObject({ code: 'internal', status: 500, requestId: 'boom-1' });
    expect(r.body).not.toMatch(/CANARY|secret|at .*\.ts|Error/);
    const logged = lines.join('');
    expect(logged).toContain('CANARY-internal');
    expect(logged).toContain('"requestId":"boom-1"');
    expect(logged).not.toContain('A'.repeat(43));
    await app.close();
  });

  it('a stopping server answers 503 shutting_down to every request but /healthz (still alive)', async () => {
    const { deps } = failingHost(true);
    const app = await buildApi(deps);
    expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    for (const url of ['/readyz', '/openapi.json', '/v1/events', '/nowhere']) {
      const r = await app.inject({ method: 'GET', url });
      expect([url, r.statusCode, r.json<{ code: string }>().code]).toEqual([url, 503, 'shutting_down']);
    }
    await app.close();
  });
});
