// The OpenAI-compatible endpoint through the official `openai` client: a real Fastify server on loopback, a real host
// (store, dispatcher, runner processes), bindings applied for the tenant; the server is `paddock serve`'s own
// (buildServer: auth with a real platform token, problem+json rewritten to OpenAI's shape on these routes).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import OpenAI, { APIError, BadRequestError, NotFoundError, RateLimitError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyConfig } from '../../host/bindings/apply.js';
import { buildServer } from '../../host/api/server.js';
import { createApiToken, revokeApiToken } from '../../host/state/apiTokens.js';
import type { HostConfig } from '../../host/config/hostConfig.js';
import { parseLimits } from '../../host/config/limits.js';
import { TOKENS } from '../../host/di/tokens.js';
import { discoverRunners } from '../../host/plugins/catalog.js';
import { base64Core } from '../../host/secrets/secretForms.js';
import type { EventData, StoredEvent } from '../../host/state/events.js';
import { openHost, type StartedHost } from '../../host/start.js';
import { FAST_LIMITS, isAlive, repoPath } from '../helpers/fixtures.js';
import { FIXTURE_RUNNERS } from '../helpers/host.js';
import { processesWith } from '../helpers/procs.js';

const CANARY = `canary-openai-${process.pid}-Qz7Lw3Rb`;
// Named like a credential: the host registers it with its redactor at start (hostSecrets.ts).
const CANARY_ENV = 'PADDOCK_TEST_OPENAI_ENDPOINT_API_KEY';
const FORMS = [
  CANARY,
  Buffer.from(CANARY).toString('hex'),
  ...[0, 1, 2].map((r) => base64Core(Buffer.from(CANARY), r)),
];

/** Stand-in for the server lane's auth hook (host/api/auth.ts): every request is this principal. */
let apiKey: string;

let host: StartedHost;
let app: FastifyInstance;
let baseURL: string;
let client: OpenAI;

/** 60 words, about 420 characters: past the ~200 characters the host's redactor holds back of a streamed message. */
const LONG_GREETING = Array.from({ length: 60 }, (_, i) => `word${String(i).padStart(2, '0')}`).join(' ');

/** Route of a binding the endpoint reaches: platform openai, bot = its id. */
const openaiRoute = (id: string) => ({ platform: 'openai', bot: id });

beforeAll(async () => {
  process.env[CANARY_ENV] = CANARY;
  const config: HostConfig = {
    dataDir: mkdtempSync(join(tmpdir(), 'paddock-openai-')),
    limits: parseLimits({ ...FAST_LIMITS, diskBytes: 64 * 1024 * 1024 }),
    runnerDirs: [FIXTURE_RUNNERS, repoPath('examples')],
    logLevel: 'silent',
    keepWorkspaces: false,
    mountRoots: [],
  };
  host = await openHost(config);
  const base = { sandbox: 'process' };
  applyConfig(
    host.store,
    {
      resources: { models: [{ id: 'sm', provider: 'scripted', model: 'scripted-1' }] },
      bindings: [
        {
          id: 'metered',
          runner: 'calls-gateway',
          ...base,
          route: openaiRoute('metered'),
          grants: { models: ['sm'] },
          config: { steps: [{ do: 'complete', model: 'sm', text: 'count my tokens' }] },
        },
        { id: 'hello', runner: 'hello-runner', ...base, route: openaiRoute('hello'), config: { pauseMs: 5 } },
        {
          id: 'long',
          runner: 'hello-runner',
          ...base,
          route: openaiRoute('long'),
          config: { greeting: LONG_GREETING, pauseMs: 5 },
        },
        {
          id: 'slow',
          runner: 'hello-runner',
          ...base,
          route: openaiRoute('slow'),
          config: { greeting: LONG_GREETING, pauseMs: 200 },
          limits: { maxQueued: 0 },
        },
        { id: 'crashy', runner: 'crashes', ...base, route: openaiRoute('crashy') },
        {
          id: 'leaky',
          runner: 'leaks-secret',
          ...base,
          route: openaiRoute('leaky'),
          config: {
            messages: [
              { form: 'plain', pad: 3, cuts: [5, 9, 14] },
              { form: 'base64', pad: 0, cuts: [4, 11] },
            ],
          },
        },
        // Not reachable from the endpoint: its route takes Telegram events only.
        { id: 'telegram-only', runner: 'hello-runner', ...base, route: { platform: 'telegram', bot: 'x' } },
        { id: 'off', runner: 'hello-runner', ...base, route: openaiRoute('off'), enabled: false },
      ],
    },
    {
      catalog: discoverRunners(config.runnerDirs),
      mountRoots: [],
      redactor: host.container.resolve(TOKENS.Redactor),
    },
    { by: 'user:test' },
  );
  app = await buildServer(host, { rate: { rate: 1_000, burst: 1_000 } });
  apiKey = createApiToken(host.store, { tenant: 'default', role: 'platform', by: 'user:test' }).token;
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address() as { port: number };
  baseURL = `http://127.0.0.1:${address.port}/v1`;
  client = new OpenAI({ baseURL, apiKey });
}, 60_000);

afterAll(async () => {
  await app?.close();
  await host?.close();
  delete process.env[CANARY_ENV];
});

/** The stored events of a run, after it ended. */
const runEvents = (sessionId: string, runId: string) =>
  host.store.readEvents(sessionId).filter((e) => e.runId === runId);

/** Resolves with the run's terminal event (from the store: committed already, or when it commits). */
function ended(runId: string): Promise<StoredEvent> {
  return new Promise((resolve) => {
    const check = (e: StoredEvent) => e.runId === runId && (e.type === 'run.ended' || e.type === 'run.interrupted');
    const unsubscribe = host.store.subscribe((e) => {
      if (check(e)) {
        unsubscribe();
        resolve(e);
      }
    });
    const run = host.store.run(runId);
    const done = run && host.store.readEvents(run.sessionId).find(check);
    if (done) {
      unsubscribe();
      resolve(done);
    }
  });
}

const ask = (model: string, text: string) => ({ model, messages: [{ role: 'user' as const, content: text }] });

describe('POST /v1/chat/completions through the official openai client', () => {
  it('non-streaming: one chat.completion with the runner reply, ids of the run in its headers', async () => {
    const { data, response } = await client.chat.completions.create(ask('hello', 'Ada')).withResponse();
    expect(data.object).toBe('chat.completion');
    expect(data.model).toBe('hello');
    expect(data.choices).toHaveLength(1);
    expect(data.choices[0]!.message).toMatchObject({ role: 'assistant', content: 'Hello, Ada! Nice to meet you.' });
    expect(data.choices[0]!.finish_reason).toBe('stop');
    const runId = response.headers.get('x-paddock-run-id')!;
    expect(data.id).toBe(`chatcmpl-${runId}`);
    const run = host.store.run(runId)!;
    expect(run).toMatchObject({ status: 'completed', bindingId: 'hello' });
    expect(response.headers.get('x-paddock-session-id')).toBe(run.sessionId);
    // The event the runner got: platform openai, bot = the binding, the last user message's text.
    const received = host.store.readEvents(run.sessionId).find((e) => e.type === 'message.received')!;
    expect((received.data as EventData<'message.received'>).event).toMatchObject({
      platform: 'openai',
      bot: 'hello',
      conversation: { type: 'private' },
      message: { parts: [{ type: 'text', text: 'Ada' }] },
    });
  });

  it('streaming: chunks are the stored text updates in order, the first with the role, joined the reply', async () => {
    const { data: stream, response } = await client.chat.completions
      .create({ ...ask('long', 'Grace'), stream: true })
      .withResponse();
    const chunks = [];
    for await (const c of stream) chunks.push(c);
    expect(chunks[0]!.choices[0]!.delta).toEqual({ role: 'assistant', content: '' });
    const contents = chunks.map((c) => c.choices[0]?.delta.content ?? '').filter(Boolean);
    const reply = `${LONG_GREETING}, Grace! Nice to meet you.`;
    expect(contents.join('')).toBe(reply);
    // Streamed as the store has it: one chunk per non-empty stored delta (the redactor holds back a message's last
    // ~200 characters, so the first chunk comes once the text is past that), in seq order.
    const run = host.store.run(response.headers.get('x-paddock-run-id')!)!;
    const stored = runEvents(run.sessionId, run.id)
      .filter((e) => e.type === 'run.update')
      .map((e) => (e.data as EventData<'run.update'>).update)
      .map((u) => (u.kind === 'message.delta' ? u.text : ''))
      .filter(Boolean);
    expect(contents).toEqual(stored);
    expect(contents.length).toBeGreaterThan(10);
    const last = chunks.at(-1)!;
    expect(last.choices[0]!.finish_reason).toBe('stop');
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks.every((c) => c.object === 'chat.completion.chunk' && c.model === 'long')).toBe(true);
  });

  it('stream_options.include_usage: a last chunk with no choices carries the host-metered usage', async () => {
    const stream = await client.chat.completions.create({
      ...ask('hello', 'Usage'),
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const c of stream) chunks.push(c);
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    // hello-runner calls no model through the gateway: the host metered 0 tokens (runner claims are not used).
    expect(last.usage).toEqual({ prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });
    expect(chunks.slice(0, -1).every((c) => c.usage === undefined)).toBe(true);
  });

  it('usage: the tokens the host metered for the run’s model calls, streamed and whole', async () => {
    const { data, response } = await client.chat.completions.create(ask('metered', 'go')).withResponse();
    const run = host.store.run(response.headers.get('x-paddock-run-id')!)!;
    const metered = run.usage as { inputTokens: number; outputTokens: number; modelCalls: number };
    expect(metered.modelCalls).toBe(1);
    expect(metered.inputTokens).toBeGreaterThan(0);
    expect(data.usage).toEqual({
      prompt_tokens: metered.inputTokens,
      completion_tokens: metered.outputTokens,
      total_tokens: metered.inputTokens + metered.outputTokens,
    });
    // Nothing streamed: the reply is the result's output (the fixture's report of its model call).
    expect(data.choices[0]!.message.content).toContain('Hello from the scripted model');
    const stream = await client.chat.completions.create({
      ...ask('metered', 'again'),
      stream: true,
      stream_options: { include_usage: true },
    });
    let last;
    for await (const c of stream) last = c;
    const again = host.store.run(last!.id.replace(/^chatcmpl-/, ''))!.usage as typeof metered;
    expect(again.modelCalls).toBe(1);
    expect(last!.usage).toEqual({
      prompt_tokens: again.inputTokens,
      completion_tokens: again.outputTokens,
      total_tokens: again.inputTokens + again.outputTokens,
    });
  });

  it('only the last user message is sent to the runner (earlier turns are the session history)', async () => {
    const reply = await client.chat.completions.create({
      model: 'hello',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'Alan' },
        { role: 'assistant', content: 'Hello, Alan!' },
        { role: 'user', content: [{ type: 'text', text: 'Barbara' }] },
      ],
    });
    expect(reply.choices[0]!.message.content).toBe('Hello, Barbara! Nice to meet you.');
  });

  it('the conversation header continues one session; without it each request starts a new one', async () => {
    const conv = `conv-${process.pid}`;
    const headers = { 'x-paddock-conversation': conv };
    const a = await client.chat.completions.create(ask('hello', 'one'), { headers }).withResponse();
    const b = await client.chat.completions.create(ask('hello', 'two'), { headers }).withResponse();
    const sessionA = a.response.headers.get('x-paddock-session-id');
    expect(sessionA).toMatch(/^ses_/);
    expect(b.response.headers.get('x-paddock-session-id')).toBe(sessionA);
    expect(b.data.choices[0]!.message.content).toBe('Hello, two! Nice to meet you.');
    const messages = host.store.readEvents(sessionA!).filter((e) => e.type === 'message.received');
    expect(messages).toHaveLength(2);
    // The `user` field names the conversation when no header does.
    const u1 = await client.chat.completions
      .create({ ...ask('hello', 'x'), user: `user-${process.pid}` })
      .withResponse();
    const u2 = await client.chat.completions
      .create({ ...ask('hello', 'y'), user: `user-${process.pid}` })
      .withResponse();
    expect(u2.response.headers.get('x-paddock-session-id')).toBe(u1.response.headers.get('x-paddock-session-id'));
    // Neither: a new conversation per request.
    const n1 = await client.chat.completions.create(ask('hello', 'p')).withResponse();
    const n2 = await client.chat.completions.create(ask('hello', 'q')).withResponse();
    expect(n2.response.headers.get('x-paddock-session-id')).not.toBe(n1.response.headers.get('x-paddock-session-id'));
  });

  it('a repeated x-paddock-event-id answers the first delivery’s run and never runs twice', async () => {
    const headers = { 'x-paddock-event-id': `evt-openai-${process.pid}` };
    const a = await client.chat.completions.create(ask('hello', 'once'), { headers }).withResponse();
    const b = await client.chat.completions.create(ask('hello', 'twice'), { headers }).withResponse();
    expect(b.data.choices[0]!.message.content).toBe('Hello, once! Nice to meet you.');
    expect(b.data.id).toBe(a.data.id);
  });

  it('an unknown model or another platform’s binding: NotFoundError; a disabled binding: 422', async () => {
    for (const model of ['nope', 'telegram-only']) {
      const error = await client.chat.completions.create(ask(model, 'hi')).catch((e: unknown) => e);
      expect(error, model).toBeInstanceOf(NotFoundError);
      expect((error as NotFoundError).code).toBe('model_not_found');
      expect((error as NotFoundError).param).toBe('model');
    }
    expect(host.store.runs({ bindingId: 'telegram-only' })).toEqual([]);
    const off = await client.chat.completions.create(ask('off', 'hi')).catch((e: unknown) => e);
    expect(off).toBeInstanceOf(APIError);
    expect(off).toMatchObject({ status: 422, code: 'binding_disabled', param: 'model' });
    expect((off as APIError).message).toContain('binding "off" is disabled');
  });

  it('a runner that crashes: the client throws an APIError naming the outcome, and does not retry', async () => {
    const before = host.store.runs({ bindingId: 'crashy' }).length;
    const error = await client.chat.completions.create(ask('crashy', 'go')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIError);
    expect((error as APIError).status).toBe(502);
    expect((error as APIError).code).toBe('run_crashed');
    expect((error as APIError).message).toMatch(/paddock run ended crashed/);
    expect(host.store.runs({ bindingId: 'crashy' }).length).toBe(before + 1); // x-should-retry: false was obeyed
  });

  it('a runner that crashes mid-stream: the streaming client throws an APIError after the final chunk', async () => {
    const stream = await client.chat.completions.create({ ...ask('crashy', 'go'), stream: true });
    const seen: unknown[] = [];
    const error = await (async () => {
      for await (const c of stream) seen.push(c);
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIError);
    expect((error as APIError).code).toBe('run_crashed');
    expect((error as APIError).message).toMatch(/paddock run ended crashed/);
    const last = seen.at(-1) as { choices: { finish_reason: string | null }[] };
    expect(last.choices[0]!.finish_reason).toBe('error');
  });

  it('a full queue: 429 with Retry-After; a client aborting mid-stream cancels the run, no runner left', async () => {
    const controller = new AbortController();
    const headers = { 'x-paddock-conversation': `busy-${process.pid}` };
    const { data: stream, response } = await client.chat.completions
      .create({ ...ask('slow', 'Abort'), stream: true }, { signal: controller.signal, headers })
      .withResponse();
    // The session's run is active and its binding queues nothing behind it (maxQueued 0).
    const full = await client.chat.completions
      .create(ask('slow', 'me too'), { headers, maxRetries: 0 })
      .withResponse()
      .catch((e: unknown) => e);
    expect(full).toBeInstanceOf(RateLimitError);
    expect(full).toMatchObject({ status: 429, code: 'queue_full' });
    expect((full as RateLimitError).headers?.get('retry-after')).toBe('1');
    const runId = response.headers.get('x-paddock-run-id')!;
    const end = ended(runId);
    for await (const c of stream) {
      if (c.choices[0]?.delta.content) {
        controller.abort(); // after the first word: the runner is mid-run
        break;
      }
    }
    const terminal = await end;
    expect(terminal.type).toBe('run.ended');
    expect((terminal.data as EventData<'run.ended'>).status).toBe('cancelled');
    // Nothing else cancels it: the runner answered the endpoint's run/cancel (the run had ~40 words left).
    expect((terminal.data as EventData<'run.ended'>).reason).toBe('runner stopped on run/cancel');
    const run = host.store.run(runId)!;
    const started = runEvents(run.sessionId, runId).find((e) => e.type === 'run.started')!;
    expect(isAlive((started.data as EventData<'run.started'>).pid)).toBe(false);
    expect(processesWith(runId)).toEqual([]);
  }, 30_000);

  it('a non-streaming client that goes away while its run is active cancels the run', async () => {
    const controller = new AbortController();
    // The run's id comes from the store: the client never gets an answer.
    const started = new Promise<string>((resolve) => {
      const unsubscribe = host.store.subscribe((e) => {
        if (e.type !== 'run.started' || host.store.run(e.runId!)?.bindingId !== 'slow') return;
        unsubscribe();
        resolve(e.runId!);
      });
    });
    const request = client.chat.completions
      .create(ask('slow', 'Leaving'), { signal: controller.signal })
      .catch((e: unknown) => e);
    const runId = await started;
    const end = ended(runId);
    controller.abort();
    expect(await request).toBeInstanceOf(Error);
    expect((await end).data).toMatchObject({ status: 'cancelled' });
  }, 30_000);

  it('malformed bodies: 400 in OpenAI’s shape naming every field at once', async () => {
    const post = (body: string, headers: Record<string, string> = {}) =>
      fetch(`${baseURL}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}`, ...headers },
        body,
      });
    const missing = await post(JSON.stringify({ messages: 'hi', stream: 'yes' }));
    expect(missing.status).toBe(400);
    const body = (await missing.json()) as { error: { type: string; code: string; errors: { path: string }[] } };
    expect(body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_request' });
    expect(body.error.errors.map((e) => e.path).sort()).toEqual(['messages', 'model', 'stream']);

    const image = await client.chat.completions
      .create({
        model: 'hello',
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'what is this?' },
              { type: 'image_url', image_url: { url: 'http://127.0.0.1/x.png' } },
            ],
          },
        ],
      })
      .catch((e: unknown) => e);
    expect(image).toBeInstanceOf(BadRequestError);
    expect((image as BadRequestError).param).toBe('messages[0].content[1].type');
    expect((image as BadRequestError).message).toContain('only text content parts are supported');

    const noUser = await post(JSON.stringify({ model: 'hello', messages: [{ role: 'system', content: 'x' }] }));
    expect(((await noUser.json()) as { error: { param: string } }).error.param).toBe('messages');
    const badHeader = await post(JSON.stringify(ask('hello', 'x')), { 'x-paddock-conversation': 'c'.repeat(300) });
    expect(((await badHeader.json()) as { error: { param: string } }).error.param).toBe(
      'header x-paddock-conversation',
    );
    const notJson = await post('{"model": "hello", ');
    expect(notJson.status).toBe(400);
    expect(((await notJson.json()) as { error: { type: string } }).error.type).toBe('invalid_request_error');
    const manyChoices = await post(JSON.stringify({ ...ask('hello', 'x'), n: 2 }));
    expect(((await manyChoices.json()) as { error: { param: string } }).error.param).toBe('n');
  });

  it('a secret the runner streams is in no form in the answer, streamed or whole', async () => {
    const whole = await client.chat.completions.create(ask('leaky', CANARY));
    const text = whole.choices[0]!.message.content!;
    expect(text).toContain('[REDACTED]'); // the runner really sent it
    const stream = await client.chat.completions.create({ ...ask('leaky', CANARY), stream: true });
    let streamed = '';
    let raw = '';
    for await (const c of stream) {
      raw += JSON.stringify(c);
      streamed += c.choices[0]?.delta.content ?? '';
    }
    expect(streamed).toBe(text);
    for (const form of FORMS) {
      expect(JSON.stringify(whole)).not.toContain(form);
      expect(raw).not.toContain(form);
    }
  });
});

describe('GET /v1/models', () => {
  it('lists the enabled bindings of the tenant the endpoint reaches', async () => {
    const ids = [];
    for await (const model of client.models.list()) {
      expect(model.object).toBe('model');
      expect(model.owned_by).toBe('paddock:default');
      ids.push(model.id);
    }
    expect(ids).toEqual(['crashy', 'hello', 'leaky', 'long', 'metered', 'slow']);
    expect((await client.models.retrieve('hello')).id).toBe('hello');
    await expect(client.models.retrieve('telegram-only')).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe('completions are open streams, streamed or whole: they', () => {
  it('count in the open-stream caps with SSE streams, and end (run cancelled) when the token is revoked', async () => {
    const capped = await buildServer(host, {
      rate: { rate: 1_000, burst: 1_000 },
      streams: { perToken: 1, recheckMs: 100 },
    });
    await capped.listen({ host: '127.0.0.1', port: 0 });
    try {
      const base = `http://127.0.0.1:${(capped.server.address() as { port: number }).port}`;
      const { token, info } = createApiToken(host.store, { tenant: 'default', role: 'platform', by: 'user:test' });
      const own = new OpenAI({ baseURL: `${base}/v1`, apiKey: token, maxRetries: 0 });
      const { data: stream, response } = await own.chat.completions
        .create(
          { ...ask('slow', 'Hold'), stream: true },
          { headers: { 'x-paddock-conversation': `cap-${process.pid}` } },
        )
        .withResponse();
      const runId = response.headers.get('x-paddock-run-id')!;
      const end = ended(runId);
      // The token's one place is taken: a second streamed completion and an SSE stream are both refused.
      const second = await own.chat.completions
        .create({ ...ask('slow', 'Second'), stream: true })
        .withResponse()
        .catch((e: unknown) => e);
      expect(second).toBeInstanceOf(RateLimitError);
      expect(second).toMatchObject({ status: 429, code: 'too_many_streams' });
      const sse = await fetch(`${base}/v1/runs/${runId}/events`, { headers: { authorization: `Bearer ${token}` } });
      expect(sse.status).toBe(429);
      expect(((await sse.json()) as { code: string }).code).toBe('too_many_streams');
      // Revoked while the stream is open: the stream ends and its run is cancelled.
      revokeApiToken(host.store, info.id, 'user:test');
      const read = (async () => {
        for await (const chunk of stream) void chunk;
      })();
      await read.catch(() => undefined);
      expect((await end).data).toMatchObject({ status: 'cancelled' });
    } finally {
      await capped.close();
    }
  });
  /** A server whose stream caps are small and whose token recheck is fast; closed after `fn`. */
  async function capped(fn: (base: string) => Promise<void>) {
    const app = await buildServer(host, {
      rate: { rate: 1_000, burst: 1_000 },
      streams: { perToken: 1, recheckMs: 100 },
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      await fn(`http://127.0.0.1:${(app.server.address() as { port: number }).port}`);
    } finally {
      await app.close();
    }
  }
  /** POST a non-streamed completion to the slow binding (about 12 s of words) with `token`. */
  const whole = (base: string, token: string, conversation: string, signal?: AbortSignal) =>
    fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${token}`,
        'x-paddock-conversation': `${conversation}-${process.pid}`,
      },
      body: JSON.stringify(ask('slow', 'Hold on')),
      signal,
    });
  /** Resolves with the id of the next run of the slow binding that streams its first word (its runner mid-run). */
  const slowSpeaking = () =>
    new Promise<string>((resolve) => {
      const unsubscribe = host.store.subscribe((e) => {
        if (e.type !== 'run.update' || host.store.run(e.runId!)?.bindingId !== 'slow') return;
        unsubscribe();
        resolve(e.runId!);
      });
    });
  /**
   * A whole completion answered 401 when its token ended; its run cancelled (`midRun`: its runner answered the
   * run/cancel), its runner gone.
   */
  async function expectEndedByToken(response: Response, runId: string, midRun: boolean) {
    expect(response.status).toBe(401);
    expect(response.headers.get('x-paddock-run-id')).toBe(runId);
    expect(response.headers.get('x-should-retry')).toBe('false');
    const body = (await response.json()) as { error: { code: string; type: string; message: string } };
    expect(body.error).toMatchObject({ code: 'unauthorized', type: 'authentication_error' });
    expect(body.error.message).toBe(
      'the API token of this request was revoked or expired while its run was active; the run was cancelled',
    );
    expect(JSON.stringify(body)).not.toContain('word00'); // nothing of the reply so far
    const terminal = await ended(runId);
    expect(terminal.data).toMatchObject({ status: 'cancelled' });
    // Cancelled by the server (the client is still there, reading the 401).
    const reason = (terminal.data as EventData<'run.ended'>).reason;
    if (midRun) expect(reason).toBe('runner stopped on run/cancel');
    else expect(reason).toMatch(/^(runner stopped on run\/cancel|cancelled before the run started)$/);
    expect(processesWith(runId)).toEqual([]);
  }

  it('a whole (non-streamed) completion holds a place in the caps while its run is active', async () => {
    await capped(async (base) => {
      const { token } = createApiToken(host.store, { tenant: 'default', role: 'platform', by: 'user:test' });
      const started = slowSpeaking();
      const leave = new AbortController();
      const pending = whole(base, token, 'whole-cap', leave.signal).catch((e: unknown) => e);
      const runId = await started;
      const end = ended(runId);
      // The token's one place is the whole completion's: a streamed one and an SSE stream are refused.
      const own = new OpenAI({ baseURL: `${base}/v1`, apiKey: token, maxRetries: 0 });
      const second = await own.chat.completions
        .create({ ...ask('hello', 'Second'), stream: true })
        .withResponse()
        .catch((e: unknown) => e);
      expect(second).toMatchObject({ status: 429, code: 'too_many_streams' });
      const sse = await fetch(`${base}/v1/runs/${runId}/events`, { headers: { authorization: `Bearer ${token}` } });
      expect(sse.status).toBe(429);
      await sse.body?.cancel();
      // Its client leaving cancels the run and gives the place back (released before the cancel, on 'close').
      leave.abort();
      expect(await pending).toBeInstanceOf(Error);
      expect((await end).data).toMatchObject({ status: 'cancelled' });
      const after = await own.chat.completions.create(ask('hello', 'Again'));
      expect(after.choices[0]!.message.content).toBeTruthy();
    });
  }, 30_000);

  it('a whole completion whose token is revoked while its run is active: 401, the run cancelled', async () => {
    await capped(async (base) => {
      const { token, info } = createApiToken(host.store, { tenant: 'default', role: 'platform', by: 'user:test' });
      const started = slowSpeaking();
      const pending = whole(base, token, 'whole-revoked');
      const runId = await started;
      revokeApiToken(host.store, info.id, 'user:test');
      const t = performance.now();
      const response = await pending;
      // One recheck interval (100 ms) plus the cancel; the run alone would take about 12 s.
      expect(performance.now() - t).toBeLessThan(5_000);
      await expectEndedByToken(response, runId, true);
    });
  }, 30_000);

  it('a whole completion whose token expires while its run is active: 401 after the expiry', async () => {
    await capped(async (base) => {
      const expiresAt = new Date(Date.now() + 1_500);
      const { token } = createApiToken(host.store, {
        tenant: 'default',
        role: 'platform',
        by: 'user:test',
        expiresAt,
      });
      const response = await whole(base, token, 'whole-expired');
      const runId = response.headers.get('x-paddock-run-id')!;
      expect(Date.now()).toBeGreaterThanOrEqual(expiresAt.getTime());
      await expectEndedByToken(response, runId, false);
    });
  }, 30_000);
});
