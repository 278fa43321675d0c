// What the gateway sees a run read taints it (docs/approvals.md §6). A secret a harness read without asking reaches
// the host in its next model request: the gateway replaces it before the provider sees it and the run is tainted,
// so its next send out needs an approval. A result of an MCP server or a knowledge base marked `sensitive` taints
// the run with that data class. The provider is a real HTTP server on loopback that records every body it gets;
// the receiver of the send is the loopback debug MCP server.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anthropicMessage } from '../helpers/gatewayRun.js';
import { chatEvent, tempHost } from '../helpers/host.js';
import { rawDb } from '../helpers/rawDb.js';
import { debugMcpReceiver } from '../helpers/approvals.js';

const KEY = `canary-model-input-${process.pid}-Vd8Kq3Nz5`;
process.env.PADDOCK_TEST_RECORDING_PROVIDER_KEY = KEY;

/** A provider that answers every Messages request with one short text and records what it got (URL, headers, body). */
function recordingProvider(bodies: string[]): Server {
  return createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      // Everything the provider got but its own key (the x-api-key header, which is the host's to send).
      const headers = Object.entries(req.headers).filter(([name]) => name !== 'x-api-key');
      bodies.push(`${req.url}\n${JSON.stringify(headers)}\n${raw}`);
      res.writeHead(200, { 'content-type': 'application/json' }).end(anthropicMessage('rec-1', 'noted'));
    });
  });
}

describe('a secret in a model request taints the run', () => {
  const host = tempHost({ limits: { wallClockMs: 60_000 } });
  const bodies: string[] = [];
  let provider: Server;
  let receiver: Awaited<ReturnType<typeof debugMcpReceiver>>;

  beforeAll(async () => {
    provider = recordingProvider(bodies);
    await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
    receiver = await debugMcpReceiver();
    const message = (text: string) => ({
      model: 'rec',
      max_tokens: 20,
      messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: text }] }],
    });
    // The request body comes from a file: a binding's config may not hold a secret's value.
    const dir = mkdtempSync(join(tmpdir(), 'paddock-model-input-'));
    let files = 0;
    const steps = (text: string, request: { path?: string; headers?: Record<string, string> } = {}) => {
      const file = join(dir, `${(files += 1)}.json`);
      writeFileSync(file, JSON.stringify({ ...request, body: message(text) }));
      return [
        { do: 'http', path: '/v1/messages', file },
        { do: 'tool', server: 'debug', tool: 'http_debug', arguments: { body: 'a harmless line' } },
      ];
    };
    const binding = (id: string, text: string, request?: { path?: string; headers?: Record<string, string> }) => ({
      id,
      runner: 'calls-gateway',
      route: { bot: id },
      sandbox: 'process' as const,
      grants: { models: ['rec'], mcpServers: ['debug'] },
      config: { steps: steps(text, request) },
    });
    const send = { do: 'tool', server: 'debug', tool: 'http_debug', arguments: { body: 'a harmless line' } };
    mkdirSync(join(dir, 'kb'));
    writeFileSync(join(dir, 'kb', 'staff.md'), '# Staff\n\nAda Lovelace, salary band 7, home address on file.\n');
    host.apply({
      resources: {
        models: [
          {
            id: 'rec',
            provider: 'anthropic',
            model: 'rec-1',
            baseUrl: `http://127.0.0.1:${(provider.address() as AddressInfo).port}`,
            apiKey: { env: 'PADDOCK_TEST_RECORDING_PROVIDER_KEY' },
            maxRetries: 0,
          },
        ],
        mcpServers: [
          { id: 'debug', url: receiver.url },
          // The same loopback server under a second name, marked: what it answers carries personal data.
          { id: 'hr', url: receiver.url, sensitive: 'personal' },
        ],
        knowledgeBases: [{ id: 'staff', path: join(dir, 'kb'), sensitive: 'confidential' }],
      },
      bindings: [
        // What a harness's Read of a file holding the key sends its model next: the file's text as a tool result.
        binding('read-secret', `DATABASE_URL=postgres://app@db/app\nPROVIDER_KEY=${KEY}\n`),
        binding('read-plain', 'just some source code\n'),
        // What an outside attack sent past the first version: the secret in the query string and passed-on headers.
        binding('query-secret', 'q', { path: `/v1/messages?beta=true&k=${KEY}` }),
        binding('query-encoded', 'q', {
          path: `/v1/messages?${[...KEY].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('')}=1`,
        }),
        binding('beta-secret', 'b', { headers: { 'anthropic-beta': KEY } }),
        binding('version-secret', 'v', { headers: { 'anthropic-version': `2023-06-01, ${KEY}` } }),
        {
          id: 'reads-marked',
          runner: 'calls-gateway',
          route: { bot: 'reads-marked' },
          sandbox: 'process' as const,
          grants: { mcpServers: ['debug', 'hr'], knowledgeBases: ['staff'] },
          config: {
            steps: [
              { do: 'tool', server: 'hr', tool: 'http_debug', arguments: { body: 'who is in band 7?' } },
              { do: 'kb', knowledgeBase: 'staff', query: 'salary band' },
              send,
            ],
          },
        },
      ],
    });
  });
  afterAll(async () => {
    await host.close();
    provider.close();
    await receiver.close();
  });

  async function run(bot: string) {
    const ticket = await host.dispatcher.dispatch(chatEvent({ bot }));
    if (ticket.status === 'duplicate') throw new Error('duplicate');
    const outcome = await ticket.done;
    expect(outcome.status, outcome.reason).toBe('completed');
    const { report } = JSON.parse((outcome.result?.output?.parts[0] as { text: string }).text) as {
      report: { status?: number; isError?: boolean; content?: { text: string }[] }[];
    };
    return { runId: ticket.runId, report };
  }
  const eventsOf = (runId: string) =>
    (
      rawDb(host.store).prepare('SELECT type, data FROM events WHERE run_id = ? ORDER BY seq').all(runId) as {
        type: string;
        data: string;
      }[]
    ).map((e) => ({ type: e.type, ...(JSON.parse(e.data) as Record<string, unknown>) }));

  it('the provider gets the request with the secret replaced; the run is tainted; its tool call denied', async () => {
    const before = bodies.length;
    const sentBefore = receiver.received.length;
    const { runId, report } = await run('read-secret');
    expect(report[0]).toMatchObject({ status: 200 });
    const got = bodies.slice(before).join('\n');
    expect(got).toContain('DATABASE_URL=postgres://app@db/app'); // the request went, whole but for the secret
    expect(got).toContain('[REDACTED]');
    expect(got).not.toContain(KEY);
    expect(eventsOf(runId).filter((e) => e.type === 'run.tainted')).toEqual([
      expect.objectContaining({ dataClass: 'secret', source: 'a model request through the gateway' }),
    ]);
    // approvalPolicy deny: the taint's ask is denied without asking, and the receiver got no tools/call.
    expect(report[1]).toMatchObject({ isError: true });
    expect(report[1]!.content![0]!.text).toMatch(
      /: deny, since the run is tainted \(secret\): no rule can allow sending data out/,
    );
    expect(receiver.received.slice(sentBefore).join('\n')).not.toContain('http_debug","arguments');
  });

  it('a request without a secret goes as sent and taints nothing: the same tool call goes', async () => {
    const before = bodies.length;
    const { runId, report } = await run('read-plain');
    expect(bodies.slice(before).join('\n')).toContain('just some source code');
    expect(bodies.slice(before).join('\n')).not.toContain('[REDACTED]');
    expect(eventsOf(runId).filter((e) => e.type === 'run.tainted')).toEqual([]);
    expect(report[1]).toMatchObject({ isError: false });
  });

  it('a secret in the query (plain or percent-encoded) or a passed-on header is replaced and taints', async () => {
    for (const bot of ['query-secret', 'query-encoded', 'beta-secret', 'version-secret']) {
      const before = bodies.length;
      const { runId } = await run(bot);
      const got = bodies.slice(before).join('\n');
      expect(got, bot).toContain('/v1/messages');
      expect(got, bot).not.toContain(KEY);
      expect(decodeURIComponent(got), bot).not.toContain(KEY);
      expect(
        eventsOf(runId).filter((e) => e.type === 'run.tainted'),
        bot,
      ).toHaveLength(1);
    }
  });

  it('a result of an MCP server or a knowledge base marked sensitive taints the run with its data class', async () => {
    const sentBefore = receiver.received.length;
    const { runId, report } = await run('reads-marked');
    expect(report[0]).toMatchObject({ isError: false });
    expect(eventsOf(runId).filter((e) => e.type === 'run.tainted')).toEqual([
      expect.objectContaining({ dataClass: 'personal', source: 'MCP tool hr/http_debug' }),
      expect.objectContaining({ dataClass: 'confidential', source: 'knowledge base staff' }),
    ]);
    expect(report[2]).toMatchObject({ isError: true });
    expect(report[2]!.content![0]!.text).toMatch(/since the run is tainted \(personal, confidential\)/);
    // The hr call reached the server; the send to debug did not.
    const got = receiver.received.slice(sentBefore).join('\n');
    expect(got).toContain('who is in band 7?');
    expect(got).not.toContain('a harmless line');
  });
});
