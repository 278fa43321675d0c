// A provider that echoes its own key (and encodings of it) in every part of its answer: text,
// streamed deltas, tool arguments, error bodies and headers. Through the SDK's model/complete and
// through the HTTP endpoint, no byte the runner receives and no stored byte may hold the key.
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { base64Core } from '../../host/secrets/secretForms.js';
import type { Update } from '../../sdk/protocol/types.js';
import { paddock } from '../helpers/cli.js';
import { chatEvent, tempHost } from '../helpers/host.js';
import { rawDb } from '../helpers/rawDb.js';

const KEY = `canary-provider-key-${process.pid}-Hq7Zr2Lw9`;
// Its length follows the pid, so the base64 of `KEY=<key>` may end in padding after the redacted middle.
process.env.PADDOCK_TEST_ECHO_PROVIDER_KEY = KEY;

/** The key and its encodings on their own: none may appear anywhere. */
const NEEDLES = [KEY, Buffer.from(KEY).toString('hex'), ...[0, 1, 2].map((r) => base64Core(Buffer.from(KEY), r))];
const leaksIn = (text: string) => NEEDLES.filter((n) => text.includes(n));

const sse = (type: string, data: Record<string, unknown>) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

/**
 * Fake upstream (a real local HTTP server standing in for a provider that misbehaves on purpose):
 * echoes the key it was sent. `ERROR` in the last user message answers HTTP 400 with the key in the
 * body; anything else streams text (the key whole, base64'd after a prefix, split across two
 * deltas) and a tool call whose arguments hold the key split across two JSON fragments.
 */
function fakeEchoingProvider(): Server {
  return createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const key = String(req.headers['x-api-key']);
      const body = JSON.parse(raw) as { messages: { content: string }[] };
      const last = JSON.stringify(body.messages.at(-1));
      const headers = { 'request-id': `req-${key}`, 'x-request-id': Buffer.from(`id=${key}`).toString('base64') };
      if (last.includes('ERROR')) {
        return res.writeHead(400, { ...headers, 'content-type': 'application/json' }).end(
          JSON.stringify({
            type: 'error',
            error: { type: 'invalid_request_error', message: `key ${key} is not valid for this model` },
          }),
        );
      }
      const args = JSON.stringify({ command: `curl -H 'x-api-key: ${key}'` });
      const cut = args.indexOf(key) + 9;
      res.writeHead(200, { ...headers, 'content-type': 'text/event-stream' });
      res.end(
        [
          sse('message_start', {
            message: {
              id: 'msg_1',
              type: 'message',
              role: 'assistant',
              model: 'echo',
              content: [],
              stop_reason: null,
              usage: { input_tokens: 5, output_tokens: 0 },
            },
          }),
          sse('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
          sse('content_block_delta', { index: 0, delta: { type: 'text_delta', text: `whole ${key}; ` } }),
          sse('content_block_delta', {
            index: 0,
            delta: {
              type: 'text_delta',
              text: `b64 ${Buffer.from(`KEY=${key}`).toString('base64')}; split ${key.slice(0, 11)}`,
            },
          }),
          sse('content_block_delta', { index: 0, delta: { type: 'text_delta', text: `${key.slice(11)} end` } }),
          sse('content_block_stop', { index: 0 }),
          sse('content_block_start', {
            index: 1,
            content_block: { type: 'tool_use', id: 'toolu_1', name: 'bash', input: {} },
          }),
          sse('content_block_delta', {
            index: 1,
            delta: { type: 'input_json_delta', partial_json: args.slice(0, cut) },
          }),
          sse('content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: args.slice(cut) } }),
          sse('content_block_stop', { index: 1 }),
          sse('message_delta', {
            delta: { stop_reason: 'tool_use', stop_sequence: null },
            usage: { output_tokens: 30 },
          }),
          sse('message_stop', {}),
        ].join(''),
      );
    });
  });
}

describe('a provider echoing its key: one redaction point for every path out of the gateway', () => {
  let upstream: Server;
  const host = tempHost({ limits: { wallClockMs: 60_000 } });
  const dumpDir = mkdtempSync(join(tmpdir(), 'paddock-echo-dump-'));
  const dump = join(dumpDir, 'received.json');
  let received = '';
  let report: Record<string, unknown>[] = [];
  const updates: Update[] = [];
  let outcomeText = '';

  beforeAll(async () => {
    upstream = fakeEchoingProvider();
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const baseUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    const message = (text: string) => ({
      model: 'echo',
      max_tokens: 50,
      stream: true,
      messages: [{ role: 'user', content: text }],
    });
    host.apply({
      resources: {
        models: [
          {
            id: 'echo',
            provider: 'anthropic',
            model: 'echo-1',
            baseUrl,
            apiKey: { env: 'PADDOCK_TEST_ECHO_PROVIDER_KEY' },
            maxRetries: 0,
          },
        ],
      },
      bindings: [
        {
          id: 'echo-gw',
          runner: 'calls-gateway',
          route: { bot: 'echo-gw' },
          sandbox: 'process',
          grants: { models: ['echo'] },
          config: {
            steps: [
              { do: 'complete', model: 'echo', text: 'hello' },
              { do: 'complete', model: 'echo', text: 'ERROR please' },
              { do: 'http', path: '/v1/messages', body: message('hello') },
              { do: 'http', path: '/v1/messages', body: message('ERROR please') },
              { do: 'dump', file: dump },
            ],
          },
        },
      ],
    });
    const ticket = await host.dispatcher.dispatch(chatEvent({ bot: 'echo-gw' }), { onUpdate: (u) => updates.push(u) });
    if (ticket.status === 'duplicate') throw new Error('duplicate');
    const outcome = await ticket.done;
    expect(outcome.status, outcome.reason).toBe('completed');
    outcomeText = JSON.stringify(outcome);
    received = readFileSync(dump, 'utf8');
    report = JSON.parse(received) as Record<string, unknown>[];
  }, 90_000);
  afterAll(async () => {
    await host.close();
    upstream.close();
  });

  it('the provider did get the key and did echo it (the attack is real)', () => {
    expect(report).toHaveLength(4);
    expect(received).toContain('[REDACTED]');
  });

  it('SDK model/complete: the text, the deltas and the tool arguments hold no key, even split across events', () => {
    const step = report[0] as {
      result: {
        message: { content: ({ type: 'text'; text: string } | { type: 'tool_use'; input: { command: string } })[] };
      };
      deltas: string[];
    };
    const [text, tool] = step.result.message.content;
    expect((text as { text: string }).text).toMatch(
      /^whole \[REDACTED\]; b64 S0VZPW\[REDACTED\][A-Za-z0-9+/]{0,2}={0,2}; split \[REDACTED\] end$/,
    );
    expect(leaksIn((text as { text: string }).text)).toEqual([]);
    expect((tool as { input: { command: string } }).input.command).toBe("curl -H 'x-api-key: [REDACTED]'");
    expect(step.deltas.join('')).toBe((text as { text: string }).text);
    for (const d of step.deltas) expect(leaksIn(d)).toEqual([]);
  });

  it('SDK model/complete: an error answer quoting the key reaches the runner redacted', () => {
    const step = report[1] as { error: { code: number; message: string } };
    expect(step.error.message).toMatch(/HTTP 400: .*key \[REDACTED\] is not valid/);
  });

  it('HTTP endpoint: body, headers and error bodies are redacted', () => {
    const ok = report[2] as { status: number; headers: Record<string, string>; text: string };
    expect(ok.status).toBe(200);
    expect(ok.headers['request-id']).toBe('req-[REDACTED]');
    // What the harness assembles from the events: the key split across two text deltas and across
    // two tool-argument fragments is caught there too.
    const events = ok.text
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => JSON.parse(l.slice(6)) as { type: string; delta?: { text?: string; partial_json?: string } });
    const text = events.map((e) => (e.type === 'content_block_delta' ? (e.delta?.text ?? '') : '')).join('');
    const args = events.map((e) => (e.type === 'content_block_delta' ? (e.delta?.partial_json ?? '') : '')).join('');
    expect(text).toMatch(
      /^whole \[REDACTED\]; b64 S0VZPW\[REDACTED\][A-Za-z0-9+/]{0,2}={0,2}; split \[REDACTED\] end$/,
    );
    expect(JSON.parse(args)).toEqual({ command: "curl -H 'x-api-key: [REDACTED]'" });
    const failed = report[3] as { status: number; headers: Record<string, string>; text: string };
    expect(failed.status).toBe(400);
    expect(failed.text).toContain('key [REDACTED] is not valid');
  });

  it('no byte the runner received, streamed or stored holds the key in any form', async () => {
    expect(leaksIn(received)).toEqual([]);
    expect(leaksIn(JSON.stringify(updates))).toEqual([]);
    expect(leaksIn(outcomeText)).toEqual([]);
    rawDb(host.store).pragma('wal_checkpoint(PASSIVE)');
    for (const file of readdirSync(host.dataDir).filter((f) => f.startsWith('paddock.db')))
      expect(leaksIn(readFileSync(join(host.dataDir, file)).toString('latin1')), file).toEqual([]);
    const audit = (await paddock(['audit', 'export'], { dataDir: host.dataDir })).stdout;
    expect(audit).toContain('gateway.call');
    expect(leaksIn(audit)).toEqual([]);
  });
});
