// A host whose lease may have run out (Store.leaseHolds, docs/runner-spawner.md "The host pauses past its lease")
// sends nothing upstream for its runs: no model call, no retry of one, no MCP tool call, not even one that was
// already past the gateway's door when the lease lapsed. Real HTTP provider, real MCP server (official SDK, stdio);
// the lease is lapsed through the store's own bound, as the lease keeper does when a renewal fails.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpServerResourceSchema, ModelResourceSchema } from '../../host/bindings/schema.js';
import type { GatewayRunHandle } from '../../host/gateway/gateway.js';
import { Store } from '../../host/state/store.js';
import { repoPath } from '../helpers/fixtures.js';
import { anthropicMessage, openGatewayRun } from '../helpers/gatewayRun.js';
import { tempHost } from '../helpers/host.js';
import { rawDb } from '../helpers/rawDb.js';

const MCP_SERVER = repoPath('test/fixtures/mcp/server.mjs');
const host = tempHost();
/** Model names the provider was sent, in order of arrival. */
const arrivals: string[] = [];
/** Called at a request's arrival, before the provider answers it. */
let onArrival: (model: string) => void = () => {};
let provider: Server;

beforeAll(async () => {
  // A provider answering 429 with `Retry-After: 0` to a model named `busy` (the gateway retries at once), 200 else.
  provider = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      const model = (JSON.parse(raw) as { model: string }).model;
      arrivals.push(model);
      onArrival(model);
      if (model === 'busy')
        return res
          .writeHead(429, { 'retry-after': '0', 'content-type': 'application/json' })
          .end('{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}');
      res.writeHead(200, { 'content-type': 'application/json' }).end(anthropicMessage(model, 'fine'));
    });
  });
  await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
  process.env.PADDOCK_TEST_LEASE_KEY = 'sk-test-lease-key-0123456789';
});

afterAll(async () => {
  await host.close();
  provider.close();
});

/** Lapse this host's lease now, as the lease keeper does when it cannot renew. */
const lapse = () => host.store.holdToLease(0);
/** A lease renewed for the next minute. */
const renew = () => host.store.holdToLease(performance.now() + 60_000);

let runs = 0;
/** Open the gateway for a made-up run granted the provider's models and the fixture MCP server's `calls`. */
async function openRun(): Promise<GatewayRunHandle> {
  runs += 1;
  const baseUrl = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`;
  const models = ['quiet', 'busy'].map((id) =>
    ModelResourceSchema.parse({
      id,
      provider: 'anthropic',
      model: id,
      baseUrl,
      maxRetries: 2,
      apiKey: { env: 'PADDOCK_TEST_LEASE_KEY' },
    }),
  );
  const tools = McpServerResourceSchema.parse({
    id: 'tools',
    command: process.execPath,
    args: [MCP_SERVER],
    timeoutMs: 5000,
  });
  return openGatewayRun(host, {
    runId: `run-lease-${process.pid}-${runs}`,
    resources: { models, mcpServers: [tools] },
    access: {
      models: models.map((m) => ({ id: m.id, provider: m.provider, model: m.model })),
      mcpServers: [{ id: 'tools', allowedTools: ['calls'], deniedTools: [] }],
    },
  });
}

const ask = (handle: GatewayRunHandle, model: string) =>
  fetch(`${handle.baseUrl}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': handle.token },
    body: JSON.stringify({ model, max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }),
  }).then(async (r) => ({ status: r.status, text: await r.text() }));

const callsOf = (runId: string) =>
  rawDb(host.store)
    .prepare('SELECT model_id, status, attempts, error FROM gateway_calls WHERE run_id = ? ORDER BY seq')
    .all(runId);

describe('a host whose lease may have run out sends nothing upstream for its runs', () => {
  it('model calls: none is sent while it lapsed, nor the retry of one it lapsed in; all go when renewed', async () => {
    const handle = await openRun();
    try {
      renew();
      expect((await ask(handle, 'quiet')).status).toBe(200);
      lapse();
      const refused = await ask(handle, 'quiet');
      expect(refused.status).toBe(503);
      expect(refused.text).toContain(Store.LEASE_MAY_HAVE_RUN_OUT);
      expect(arrivals).toEqual(['quiet']);
      // The lease lapses while a call is upstream: its answer (429, retry at once) comes back, the retry is not sent.
      renew();
      onArrival = (model) => model === 'busy' && lapse();
      const retried = await ask(handle, 'busy');
      onArrival = () => {};
      expect(retried.status).toBe(503);
      expect(retried.text).toContain(Store.LEASE_MAY_HAVE_RUN_OUT);
      expect(arrivals).toEqual(['quiet', 'busy']);
      renew();
      expect((await ask(handle, 'quiet')).status).toBe(200);
      expect(arrivals).toEqual(['quiet', 'busy', 'quiet']);
      expect(callsOf(handle.run.claims.runId)).toEqual([
        expect.objectContaining({ model_id: 'quiet', status: 200, attempts: 1 }),
        expect.objectContaining({
          model_id: 'busy',
          status: 503,
          attempts: 1,
          error: expect.stringContaining('lease'),
        }),
        expect.objectContaining({ model_id: 'quiet', status: 200, attempts: 1 }),
      ]);
    } finally {
      host.store.holdToLease(undefined);
      await handle.close();
    }
  });

  it('MCP tool calls: refused at the door while it lapsed, and one that lapsed past the door is not sent', async () => {
    const handle = await openRun();
    const client = new Client({ name: 'lease-test', version: '1' });
    const call = () => client.callTool({ name: 'calls', arguments: {} });
    try {
      renew();
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${handle.baseUrl}/mcp/tools`), {
          requestInit: { headers: { authorization: `Bearer ${handle.token}` } },
        }),
      );
      expect(await call()).toMatchObject({ content: [{ type: 'text', text: '1' }] });
      lapse();
      await expect(call()).rejects.toThrow(/lease may have run out/);
      // The lease lapses after the gateway let the call in, while the run's policy decides on it (an approval
      // waiting for a human, a host paused there): the call is answered as refused and never reaches the server.
      renew();
      handle.run.toolGate = () => {
        lapse();
        return Promise.resolve(undefined);
      };
      expect(await call()).toMatchObject({
        isError: true,
        content: [{ type: 'text', text: `paddock: ${Store.LEASE_MAY_HAVE_RUN_OUT} (denied by host.lease)` }],
      });
      delete handle.run.toolGate;
      renew();
      // The server counts the calls it was sent: the two refused ones never arrived.
      expect(await call()).toMatchObject({ content: [{ type: 'text', text: '2' }] });
    } finally {
      host.store.holdToLease(undefined);
      await client.close();
      await handle.close();
    }
  });
});
