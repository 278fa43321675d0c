// `paddock serve` as a child process: the stream caps set by its flags (per token, per tenant, per server), a stream
// whose token is revoked by another process (`paddock tokens revoke`) ending within the recheck bound, Node-parser
// refusals answered as problem+json, and bad cap flags refused before anything starts.
import { mkdtempSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Store } from '../../host/state/store.js';
import { paddock } from '../helpers/cli.js';
import { startServe, type ServeChild } from '../helpers/serve.js';
import { openSse, type SseClient } from '../helpers/sse.js';

const home = mkdtempSync(join(tmpdir(), 'paddock-serve-streams-'));
let server: ServeChild;
let sessionId = '';
let acmeSessionId = '';

async function token(tenant = 'default'): Promise<string> {
  const r = await paddock(['tokens', 'create', '--tenant', tenant, '--role', 'platform'], { dataDir: home });
  expect(r.exitCode, r.stderr).toBe(0);
  return r.stdout.trim();
}
const stream = (t: string, session = sessionId) =>
  openSse(`${server.url}/v1/sessions/${session}/events`, { headers: { authorization: `Bearer ${t}` } });
async function refused(t: string, session = sessionId) {
  const res = await fetch(`${server.url}/v1/sessions/${session}/events`, {
    headers: { authorization: `Bearer ${t}` },
  });
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as object };
}

beforeAll(async () => {
  // A session to stream, made on the data folder before the server starts (a stream needs nothing more).
  const store = Store.open({ dataDir: home });
  sessionId = store.ensureSession('default', 'streamed', 'c').sessionId;
  acmeSessionId = store.ensureSession('acme', 'streamed', 'c').sessionId;
  store.close();
  const caps = ['--max-streams-per-token', '2', '--max-streams-per-tenant', '3', '--max-streams', '4'];
  server = await startServe(home, caps, {
    PADDOCK_LOG_LEVEL: 'info',
  });
}, 60_000);
afterAll(async () => {
  expect(await server.stop()).toBe(0);
});

describe('paddock serve: open streams', () => {
  it(
    '--max-streams-per-token, --max-streams-per-tenant and --max-streams cap open streams (429); ' +
      'a revoked token’s streams end within the bound',
    async () => {
      const a = await token();
      const b = await token();
      const c = await token('acme');
      const held: SseClient[] = [await stream(a), await stream(a)];
      expect(held.map((s) => s.status)).toEqual([200, 200]);
      const overToken = await refused(a);
      expect(overToken).toMatchObject({ status: 429, retryAfter: '5' });
      expect(overToken.body).toMatchObject({ code: 'too_many_streams', scope: 'token', limit: 2 });
      held.push(await stream(b));
      expect(held[2]!.status).toBe(200);
      // b holds one stream of its two, but the default tenant's tokens hold three together.
      const overTenant = await refused(b);
      expect(overTenant).toMatchObject({ status: 429, retryAfter: '5' });
      expect(overTenant.body).toMatchObject({ code: 'too_many_streams', scope: 'tenant', limit: 3 });
      // Another tenant's token takes the server's last place, then meets the server's cap.
      held.push(await stream(c, acmeSessionId));
      expect(held[3]!.status).toBe(200);
      expect((await refused(c, acmeSessionId)).body).toMatchObject({ scope: 'server', limit: 4 });
      for (const s of held) await s.waitForCount(1);

      // Revoked by another process: the server re-checks open streams' tokens every second.
      const revoked = await paddock(['tokens', 'revoke', a.split('_')[1]!], { dataDir: home });
      expect(revoked.exitCode, revoked.stderr).toBe(0);
      const t = performance.now();
      expect(await Promise.all(held.slice(0, 2).map((s) => s.closed))).toEqual(['end', 'end']);
      // The bound: one recheck interval (1 s) plus the event loop's delay; generous for a shared, loaded machine.
      expect(performance.now() - t).toBeLessThan(5000);
      // Their places are free again (b's second stream is admitted once the server has released them).
      const again = await stream(b);
      expect(again.status).toBe(200);
      for (const s of [held[2]!, held[3]!, again]) s.destroy();
    },
  );

  it('oversized headers get a 431 problem+json whose request id is in the server log', async () => {
    const url = new URL(server.url);
    const text = await new Promise<string>((resolve, reject) => {
      const s = connect(Number(url.port), url.hostname);
      let out = '';
      s.on('data', (d) => (out += d.toString()));
      s.on('error', reject);
      s.on('close', () => resolve(out));
      s.write(`GET /healthz HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(40_000)}\r\n\r\n`);
    });
    expect(text).toMatch(/^HTTP\/1\.1 431 /);
    const requestId = /\r\nx-request-id: ([^\r]+)\r\n/.exec(text)![1]!;
    const body = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>;
    expect(body).toMatchObject({ code: 'headers_too_large', status: 431, requestId });
    await server.waitFor(new RegExp(`"requestId":"${requestId}"`));
  });

  it('a cap flag that is not a whole number from 1 is a usage error (exit 2) naming the flag', async () => {
    for (const [flag, value] of [
      ['--max-streams', '0'],
      ['--max-streams-per-token', 'x'],
      ['--max-streams-per-tenant', '1.5'],
      ['--max-queued-per-tenant', '0'],
    ] as const) {
      const r = await paddock(['serve', '--listen', '127.0.0.1:0', flag, value], { dataDir: home });
      expect(r.exitCode).toBe(2);
      expect(r.stderr).toContain(`${flag} must be a whole number from 1 to 1000000`);
    }
  });
});
