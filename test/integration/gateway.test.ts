// The host gateway over real HTTP: run tokens, the three wire formats through the scripted
// provider, refusals and their audit records, budgets, retries, the circuit breaker, and a canary
// provider key that must reach the provider and nowhere else.
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { indexResources } from '../../host/authz/runAccess.js';
import { BindingLimitsSchema, ModelResourceSchema, type ModelResource } from '../../host/bindings/schema.js';
import type { GatewayRunHandle } from '../../host/gateway/gateway.js';
import { DEFAULT_MAX_OUTPUT_TOKENS } from '../../host/gateway/modelBudget.js';
import type { GatewayRun } from '../../host/gateway/runContext.js';
import { SseParser } from '../../host/gateway/wire/sse.js';
import { anthropicMessage } from '../helpers/gatewayRun.js';
import { tempHost } from '../helpers/host.js';
import { filesContaining } from '../helpers/canary.js';
import { exportAudit } from '../../host/ops/auditExport.js';
import { repoPath } from '../helpers/fixtures.js';
import { rawDb } from '../helpers/rawDb.js';

type Host = ReturnType<typeof tempHost>;

let runCounter = 0;
/** Open the gateway for a made-up run that is granted `granted` (ids of `models`). */
async function openRun(
  host: Host,
  models: ModelResource[],
  options: {
    granted?: string[];
    limits?: Record<string, unknown>;
    backend?: 'process' | 'bwrap';
    onCallRecorded?: GatewayRun['onCallRecorded'];
    tenant?: string;
  } = {},
) {
  runCounter += 1;
  const notices: { level: string; message: string }[] = [];
  const granted = options.granted ?? models.map((m) => m.id);
  const handle = await host.gateway.openRun({
    ...(options.onCallRecorded ? { onCallRecorded: options.onCallRecorded } : {}),
    claims: {
      runId: `run-gw-${process.pid}-${runCounter}`,
      sessionId: `ses-gw-${runCounter}`,
      bindingId: 'gw-binding',
      runnerId: 'test-client',
    },
    tenant: options.tenant ?? 'default',
    access: {
      models: models
        .filter((m) => granted.includes(m.id))
        .map((m) => ({ id: m.id, provider: m.provider, model: m.model })),
      mcpServers: [],
      knowledgeBases: [],
    },
    resources: indexResources({ models, knowledgeBases: [], mcpServers: [], skills: [], artifacts: [], mounts: [] }),
    budget: BindingLimitsSchema.parse(options.limits ?? {}),
    backend: options.backend ?? 'process',
    sandboxLimits: host.config.limits,
    notice: (level, message) => notices.push({ level, message }),
  });
  return { handle, notices };
}

const scripted = (over: Record<string, unknown> = {}) =>
  ModelResourceSchema.parse({ id: 'sm', provider: 'scripted', model: 'scripted-1', maxRetries: 2, ...over });

/** POST a JSON body to the gateway; the whole answer as text. */
async function post(
  handle: GatewayRunHandle,
  path: string,
  body: unknown,
  headers: Record<string, string> = { 'x-api-key': handle.token },
) {
  const response = await fetch(`${handle.baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

const anthropicBody = (text: string, extra: Record<string, unknown> = {}) => ({
  model: 'sm',
  max_tokens: 100,
  stream: true,
  messages: [{ role: 'user', content: text }],
  ...extra,
});

/** The text of an Anthropic SSE answer. */
function sseText(raw: string): string {
  return new SseParser()
    .push(raw + '\n\n')
    .map((e) => JSON.parse(e.data) as { type: string; delta?: { type: string; text?: string } })
    .filter((e) => e.type === 'content_block_delta' && e.delta?.type === 'text_delta')
    .map((e) => e.delta!.text)
    .join('');
}

const auditOf = (host: Host, type: string) =>
  rawDb(host.store)
    .prepare('SELECT data FROM audit WHERE type = ? ORDER BY seq')
    .pluck()
    .all(type)
    .map((d) => JSON.parse(d as string) as Record<string, unknown>);
const callsOf = (host: Host, runId: string) =>
  rawDb(host.store).prepare('SELECT * FROM gateway_calls WHERE run_id = ? ORDER BY seq').all(runId) as Record<
    string,
    unknown
  >[];

describe('the gateway serves models to a run token, in three wire formats', () => {
  let host: Host;
  beforeAll(() => (host = tempHost()));
  afterAll(() => host.close());

  it(
    'a raw HTTP client with the run token gets a scripted streamed reply (Anthropic SSE, ?beta=true), metered ' +
      'and audited as scripted',
    async () => {
      const { handle } = await openRun(host, [scripted()]);
      const answer = await post(handle, '/v1/messages?beta=true', anthropicBody('SAY:hello from the gateway'));
      expect(answer.status).toBe(200);
      expect(answer.headers.get('content-type')).toContain('text/event-stream');
      expect(answer.headers.get('x-paddock-scripted')).toBe('true');
      expect(sseText(answer.text)).toBe('hello from the gateway');
      const [call] = callsOf(host, handle.run.claims.runId);
      expect(call).toMatchObject({
        model_id: 'sm',
        provider: 'scripted',
        endpoint: 'anthropic',
        status: 200,
        attempts: 1,
      });
      expect(Number(call!.input_tokens)).toBeGreaterThan(0);
      expect(Number(call!.output_tokens)).toBeGreaterThan(0);
      expect(auditOf(host, 'gateway.call').at(-1)).toMatchObject({
        model: 'sm',
        scripted: true,
        status: 200,
        inputTokens: call!.input_tokens,
        outputTokens: call!.output_tokens,
      });
      await handle.close();
    },
  );

  it(
    'non-streaming Messages, OpenAI Responses (stream) and Chat Completions (stream, JSON) answer in their own ' +
      'shapes; a tool round works',
    async () => {
      const { handle } = await openRun(host, [scripted()]);
      const json = await post(handle, '/v1/messages', { ...anthropicBody('SAY:plain'), stream: false });
      expect(JSON.parse(json.text)).toMatchObject({
        type: 'message',
        role: 'assistant',
        content: [{ type: 'text', text: 'plain' }],
        stop_reason: 'end_turn',
      });

      const responses = await post(
        handle,
        '/v1/responses',
        {
          model: 'sm',
          stream: true,
          input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'USE_TOOL:Bash:echo hi' }] }],
          tools: [{ type: 'function', name: 'exec_command' }],
        },
        { authorization: `Bearer ${handle.token}` },
      );
      expect(responses.status).toBe(200);
      const completed = new SseParser()
        .push(responses.text)
        .map((e) => body<{ type: string; response: { output: unknown[] } }>(e.data))
        .find((e) => e.type === 'response.completed');
      expect(completed?.response.output[0]).toMatchObject({
        type: 'function_call',
        name: 'exec_command',
        arguments: JSON.stringify({ cmd: 'echo hi' }),
      });

      const followUp = await post(handle, '/v1/responses', {
        model: 'sm',
        stream: false,
        input: [
          { type: 'function_call', call_id: 'c1', name: 'exec_command', arguments: '{}' },
          { type: 'function_call_output', call_id: 'c1', output: 'hi\n' },
        ],
      });
      expect(body<ResponsesBody>(followUp.text).output[0]?.content[0]?.text).toBe('TOOL_RESULT_SEEN: hi\n');

      const chat = await post(handle, '/v1/chat/completions', {
        model: 'scripted-1',
        stream: true,
        messages: [
          { role: 'system', content: 's' },
          { role: 'user', content: 'LONG:5' },
        ],
      });
      const chunks = chat.text
        .split('\n\n')
        .filter((l) => l.startsWith('data: {'))
        .map((l) => body<ChatChunk>(l.slice(6)));
      expect(chunks.flatMap((c) => c.choices.map((ch) => ch.delta.content ?? '')).join('')).toBe(
        'chunk 1 chunk 2 chunk 3 chunk 4 chunk 5.',
      );
      expect(chat.text.trim().endsWith('data: [DONE]')).toBe(true);
      const chatJson = await post(handle, '/v1/chat/completions', {
        model: 'sm',
        messages: [{ role: 'user', content: 'SAY:ok' }],
      });
      expect(body<ChatChunk>(chatJson.text).choices[0]?.message.content).toBe('ok');
      // A harness with fixed model names (Codex) selects the granted model by header.
      const byHeader = await post(
        handle,
        '/v1/responses',
        { model: 'gpt-5.5', stream: false, input: 'SAY:chosen by header' },
        { authorization: `Bearer ${handle.token}`, 'x-paddock-model': 'sm' },
      );
      expect(body<ResponsesBody>(byHeader.text).output[0]?.content[0]?.text).toBe('chosen by header');
      expect((await post(handle, '/v1/responses', { model: 'gpt-5.5', stream: false, input: 'hi' })).status).toBe(403);
      await handle.close();
    },
  );

  it(
    "no token, an unknown token, a revoked token (the run ended), another run's token on a run socket and an " +
      'ungranted model are refused and audited',
    async () => {
      const { handle } = await openRun(host, [scripted(), scripted({ id: 'other', model: 'other-1' })], {
        granted: ['sm'],
      });
      const before = auditOf(host, 'gateway.denied').length;
      const none = await post(handle, '/v1/messages', anthropicBody('hi'), {});
      expect(none.status).toBe(401);
      expect(JSON.parse(none.text)).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
      expect((await post(handle, '/v1/messages', anthropicBody('hi'), { 'x-api-key': 'pdk_run_forged' })).status).toBe(
        401,
      );
      const ungranted = await post(handle, '/v1/messages', { ...anthropicBody('hi'), model: 'other' });
      expect(ungranted.status).toBe(403);
      expect(ungranted.text).toContain('not granted');

      // A bwrap run's own socket serves its token only.
      const { handle: sandboxed } = await openRun(host, [scripted()], { backend: 'bwrap' });
      const viaSocket = (token: string) =>
        new Promise<number>((resolve, reject) => {
          const req = httpRequest(
            {
              socketPath: sandboxed.socketPath,
              path: '/v1/messages',
              method: 'POST',
              headers: { 'content-type': 'application/json', 'x-api-key': token },
            },
            (res) => {
              res.resume();
              resolve(res.statusCode ?? 0);
            },
          );
          req.on('error', reject);
          req.end(JSON.stringify(anthropicBody('SAY:ok')));
        });
      expect(await viaSocket(sandboxed.token)).toBe(200);
      expect(await viaSocket(handle.token)).toBe(401);
      await sandboxed.close();

      const token = handle.token;
      await handle.close();
      const revoked = await post(handle, '/v1/messages', anthropicBody('hi'), { 'x-api-key': token });
      expect(revoked.status).toBe(401);
      expect(revoked.text).toContain('revoked');
      const denials = auditOf(host, 'gateway.denied').slice(before);
      expect(denials.map((d) => d.reason ?? d.deniedBy)).toEqual([
        'token missing',
        'token unknown',
        'binding.grants.models',
        'token another run',
        'token revoked',
      ]);
      // No refusal record holds a token.
      expect(JSON.stringify(denials)).not.toContain(token);
    },
  );

  it('a 429 is retried with backoff and the call succeeds; the record counts both attempts', async () => {
    const { handle } = await openRun(host, [scripted()]);
    const answer = await post(handle, '/v1/messages', anthropicBody('FAIL:429x1 SAY:after a retry'));
    expect(answer.status).toBe(200);
    expect(sseText(answer.text)).toBe('after a retry');
    expect(callsOf(host, handle.run.claims.runId).at(-1)).toMatchObject({ status: 200, attempts: 2 });
    // Out of retries, the provider's own error reaches the harness.
    const exhausted = await post(handle, '/v1/messages', anthropicBody('FAIL:529'));
    expect(exhausted.status).toBe(529);
    expect(JSON.parse(exhausted.text)).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });
    await handle.close();
  });

  it(
    'repeated 500s open the circuit: later calls get 503 without reaching the provider, the breaker is ' +
      'audited, and another tenant on the same endpoint has its own',
    async () => {
      const h = tempHost();
      try {
        const { handle } = await openRun(h, [scripted({ maxRetries: 0 })]);
        for (let i = 0; i < 5; i += 1)
          expect((await post(handle, '/v1/messages', anthropicBody(`FAIL:500 #${i}`))).status).toBe(500);
        const open = await post(handle, '/v1/messages', anthropicBody('SAY:fine now'));
        expect(open.status).toBe(503);
        expect(open.text).toContain('circuit breaker');
        const calls = callsOf(h, handle.run.claims.runId);
        expect(calls.at(-1)).toMatchObject({ status: 503, attempts: 0 });
        expect(auditOf(h, 'gateway.circuit')).toEqual([
          expect.objectContaining({ tenant: 'default', from: 'closed', to: 'open', consecutiveFailures: 5 }),
        ]);
        // Another tenant's runs on the same endpoint (the operator's model) have their own breaker: still closed.
        const { handle: other } = await openRun(h, [scripted({ maxRetries: 0 })], { tenant: 'acme' });
        const through = await post(other, '/v1/messages', anthropicBody('SAY:fine for acme'));
        expect(through.status).toBe(200);
        expect(sseText(through.text)).toBe('fine for acme');
        // Its own failures open only its own breaker; the first tenant's stays open (nothing closed it).
        for (let i = 0; i < 5; i += 1)
          expect((await post(other, '/v1/messages', anthropicBody(`FAIL:500 acme #${i}`))).status).toBe(500);
        expect((await post(other, '/v1/messages', anthropicBody('SAY:x'))).status).toBe(503);
        expect((await post(handle, '/v1/messages', anthropicBody('SAY:x'))).status).toBe(503);
        expect(auditOf(h, 'gateway.circuit')).toEqual([
          expect.objectContaining({ tenant: 'default', to: 'open' }),
          expect.objectContaining({ tenant: 'acme', to: 'open' }),
        ]);
        // Each tenant's admin sees its own breaker's record in its audit export, not the other's.
        const exported = exportAudit(h.store, 'acme', { after: 0, limit: 1000, scan: 100_000 }).records;
        expect(exported.filter((r) => r.type === 'gateway.circuit').map((r) => r.data)).toEqual([
          expect.objectContaining({ tenant: 'acme', to: 'open' }),
        ]);
        await other.close();
        await handle.close();
      } finally {
        await h.close();
      }
    },
  );
});

/** A request body on each wire, asking for at most `max` output tokens (none: the host default). */
function wireCall(
  format: 'anthropic' | 'responses' | 'chat',
  text: string,
  max?: number,
): { path: string; body: Record<string, unknown> } {
  if (format === 'anthropic')
    return {
      path: '/v1/messages',
      body: {
        model: 'sm',
        stream: true,
        messages: [{ role: 'user', content: text }],
        ...(max ? { max_tokens: max } : {}),
      },
    };
  if (format === 'responses')
    return {
      path: '/v1/responses',
      body: { model: 'sm', stream: true, input: text, ...(max ? { max_output_tokens: max } : {}) },
    };
  return {
    path: '/v1/chat/completions',
    body: {
      model: 'sm',
      stream: true,
      messages: [{ role: 'user', content: text }],
      ...(max ? { max_completion_tokens: max } : {}),
    },
  };
}

const FORMATS = ['anthropic', 'responses', 'chat'] as const;
/** The shapes of the gateway's JSON answers this file reads (typed, so no `any` leaks into assertions). */
type ResponsesBody = { output: { content: { text: string }[] }[] };
type ChatChunk = { choices: { delta: { content?: string }; message: { content: string } }[] };
type ErrorBody = { error: { message: string } };
const body = <T>(text: string): T => JSON.parse(text) as T;

const reservationsOf = (host: Host, runId: string) =>
  rawDb(host.store).prepare('SELECT COUNT(*) FROM gateway_reservations WHERE run_id = ?').pluck().get(runId) as number;
const deniedFor = (host: Host, runId: string) =>
  (
    rawDb(host.store)
      .prepare("SELECT data FROM audit WHERE type = 'gateway.denied' AND run_id = ? ORDER BY seq")
      .pluck()
      .all(runId) as string[]
  ).map((d) => JSON.parse(d) as Record<string, unknown>);
const callAudits = (host: Host, runId: string) =>
  (
    rawDb(host.store)
      .prepare("SELECT data FROM audit WHERE type = 'gateway.call' AND run_id = ? ORDER BY seq")
      .pluck()
      .all(runId) as string[]
  ).map(
    (d) =>
      JSON.parse(d) as {
        inputTokens: number;
        outputTokens: number;
        costUsd: number;
        reservedTokens: number;
        reservedCostUsd: number;
        status: number;
        overrunTokens?: number;
      },
  );

/** Fire all requests at once (no await in between) and collect status + parsed error message. */
async function burst(handle: GatewayRunHandle, calls: { path: string; body: Record<string, unknown> }[]) {
  const answers = await Promise.all(calls.map((c) => post(handle, c.path, c.body)));
  return answers.map((a) => ({
    status: a.status,
    message: a.status === 200 ? '' : String((JSON.parse(a.text) as { error: { message: string } }).error.message),
    errorType: a.status === 200 ? '' : String((JSON.parse(a.text) as { error: { type: string } }).error.type),
    text: a.text,
  }));
}

describe('budgets hold under concurrency: reserve before the call, settle after', () => {
  let host: Host;
  beforeAll(() => (host = tempHost()));
  afterAll(() => host.close());

  // Slow streams keep the admitted calls in flight while every other request of the burst arrives.
  for (const count of [20, 50]) {
    it(
      `${count} truly concurrent calls (three wires) against modelTokensPerRun 60: metered total ≤ 60, every ` +
        `refusal in its wire's shape and audited`,
      async () => {
        const { handle, notices } = await openRun(host, [scripted()], { limits: { modelTokensPerRun: 60 } });
        const runId = handle.run.claims.runId;
        const calls = Array.from({ length: count }, (_, i) => wireCall(FORMATS[i % 3]!, `LONG:20 SLOW:40 #${i}`, 5));
        const answers = await burst(handle, calls);
        const metered = callsOf(host, runId).filter((c) => c.status === 200);
        const total = metered.reduce((sum, c) => sum + Number(c.input_tokens) + Number(c.output_tokens), 0);
        // The designed bound: the scripted model bills exactly the input estimate and stops at
        // max_tokens, so no call exceeds its reservation and the run never passes its budget.
        expect(total).toBeLessThanOrEqual(60);
        for (const a of callAudits(host, runId))
          expect(a.inputTokens + a.outputTokens).toBeLessThanOrEqual(a.reservedTokens);
        const ok = answers.filter((a) => a.status === 200);
        expect(ok.length).toBe(metered.length);
        expect(ok.length).toBeGreaterThanOrEqual(1);
        expect(ok.length).toBeLessThanOrEqual(2); // each reserves ≥ 25 tokens
        const refused = answers.filter((a) => a.status !== 200);
        expect(refused.length).toBe(count - ok.length);
        for (const [i, a] of answers.entries()) {
          if (a.status === 200) continue;
          expect(a.status).toBe(403);
          expect(a.errorType).toBe('permission_error');
          expect(a.message).toMatch(
            new RegExp(
              String.raw`^paddock: model budget limits\.modelTokensPerRun \(binding gw-binding\) would be` +
                String.raw` exceeded: this run used \d+ of 60 tokens, \d+ tokens are reserved by calls in f` +
                String.raw`light, and this call reserves up to \d+ tokens`,
            ),
          );
          // The wire's own error shape.
          expect(Object.keys(JSON.parse(a.text) as object).sort()).toEqual(
            FORMATS[i % 3] === 'anthropic' ? ['error', 'type'] : ['error'],
          );
        }
        const denied = deniedFor(host, runId);
        expect(denied).toHaveLength(refused.length);
        expect(denied.every((d) => d.deniedBy === 'binding.limits.modelTokensPerRun' && d.status === 403)).toBe(true);
        expect(notices.filter((n) => n.level === 'error' && n.message.includes('modelTokensPerRun'))).toHaveLength(
          refused.length,
        );
        expect(reservationsOf(host, runId)).toBe(0);
        await handle.close();
      },
    );
  }

  it('a cost budget: 20 concurrent priced calls never cost more than modelCostPerRunUsd', async () => {
    const priced = scripted({ pricing: { inputPerMTokUsd: 1_000, outputPerMTokUsd: 1_000 } });
    const { handle } = await openRun(host, [priced], { limits: { modelCostPerRunUsd: 0.1 } });
    const runId = handle.run.claims.runId;
    const answers = await burst(
      handle,
      Array.from({ length: 20 }, (_, i) => wireCall('anthropic', `LONG:40 SLOW:20 #${i}`, 10)),
    );
    const calls = callsOf(host, runId).filter((c) => c.status === 200);
    const cost = calls.reduce((sum, c) => sum + Number(c.cost_usd), 0);
    expect(cost).toBeLessThanOrEqual(0.1);
    for (const c of calls)
      expect(Number(c.cost_usd)).toBeCloseTo(
        ((Number(c.input_tokens) + Number(c.output_tokens)) * 1_000) / 1_000_000,
        10,
      );
    // (The audit log keeps fractional numbers as strings.)
    for (const a of callAudits(host, runId))
      expect(Number(a.costUsd)).toBeLessThanOrEqual(Number(a.reservedCostUsd) + 1e-12);
    expect(answers.filter((a) => a.status === 200).length).toBe(calls.length);
    const refused = answers.filter((a) => a.status !== 200);
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.every((a) => a.status === 403 && a.message.includes('limits.modelCostPerRunUsd'))).toBe(true);
    expect(deniedFor(host, runId).filter((d) => d.deniedBy === 'binding.limits.modelCostPerRunUsd')).toHaveLength(
      refused.length,
    );
    await handle.close();
  });

  it('a per-day budget is shared by two concurrent runs of one binding', async () => {
    const h = tempHost();
    try {
      const one = await openRun(h, [scripted()], { limits: { modelTokensPerDay: 90 } });
      const two = await openRun(h, [scripted()], { limits: { modelTokensPerDay: 90 } });
      const calls = Array.from({ length: 20 }, (_, i) => wireCall(FORMATS[i % 3]!, `LONG:20 SLOW:40 #${i}`, 5));
      const [a, b] = await Promise.all([burst(one.handle, calls), burst(two.handle, calls)]);
      const day = rawDb(h.store)
        .prepare(
          "SELECT COALESCE(SUM(input_tokens + output_tokens), 0) FROM gateway_calls WHERE binding_id = 'gw-binding'",
        )
        .pluck()
        .get() as number;
      expect(day).toBeLessThanOrEqual(90);
      const answers = [...a, ...b];
      expect(answers.filter((x) => x.status === 200).length).toBeGreaterThanOrEqual(2);
      const refused = answers.filter((x) => x.status !== 200);
      expect(
        refused.every(
          (x) =>
            x.status === 403 &&
            x.message.includes('limits.modelTokensPerDay') &&
            x.message.includes('the binding in the last 24 h'),
        ),
      ).toBe(true);
      expect(deniedFor(h, one.handle.run.claims.runId).length + deniedFor(h, two.handle.run.claims.runId).length).toBe(
        refused.length,
      );
      // A third run of the binding, later: the day is used up (settled calls count now).
      const three = await openRun(h, [scripted()], { limits: { modelTokensPerDay: 90 } });
      const later = await burst(three.handle, [wireCall('anthropic', 'SAY:hi', 5)]);
      expect(later[0]!.status, later[0]!.text).toBe(day + 30 > 90 ? 403 : 200);
      for (const x of [one, two, three]) await x.handle.close();
    } finally {
      await h.close();
    }
  });

  it(
    'a per-day budget holds across two host processes on one ' + 'data folder, each firing 20 concurrent calls',
    async () => {
      const h = tempHost(); // applies the migrations before the two hosts start
      try {
        const children = ['a', 'b'].map((tag) =>
          spawn(
            process.execPath,
            ['--import', 'tsx', repoPath('test/fixtures/spendsSharedDayBudget.ts'), h.dataDir, '90', '20', tag],
            { stdio: ['pipe', 'pipe', 'inherit'] },
          ),
        );
        const lines = children.map((child) => {
          const rl = createInterface({ input: child.stdout! });
          const queue: string[] = [];
          const waiters: ((line: string) => void)[] = [];
          rl.on('line', (line) => (waiters.length ? waiters.shift()!(line) : queue.push(line)));
          return () =>
            new Promise<string>((resolve) => (queue.length ? resolve(queue.shift()!) : waiters.push(resolve)));
        });
        const nextLine = lines;
        // Both hosts are up before either fires, so the two bursts overlap.
        expect(await Promise.all(nextLine.map((next) => next()))).toEqual(['ready', 'ready']);
        for (const child of children) child.stdin!.end('go\n');
        const answers = (await Promise.all(nextLine.map((next) => next()))).flatMap(
          (line) => JSON.parse(line) as { status: number; message: string }[],
        );
        await Promise.all(
          children.map(
            (child) =>
              new Promise((resolve) => (child.exitCode !== null ? resolve(null) : child.once('exit', resolve))),
          ),
        );
        const day = rawDb(h.store)
          .prepare(
            'SELECT COALESCE(SUM(input_tokens + output_tokens), 0) FROM gateway_calls WHERE binding_id = ' +
              "'shared-day' AND status = 200",
          )
          .pluck()
          .get() as number;
        expect(day).toBeGreaterThan(0);
        expect(day).toBeLessThanOrEqual(90);
        const ok = answers.filter((a) => a.status === 200).length;
        expect(ok).toBe(
          rawDb(h.store)
            .prepare("SELECT COUNT(*) FROM gateway_calls WHERE binding_id = 'shared-day' AND status = 200")
            .pluck()
            .get(),
        );
        const refused = answers.filter((a) => a.status !== 200);
        expect(refused).toHaveLength(40 - ok);
        expect(refused.every((a) => a.status === 403 && a.message.includes('limits.modelTokensPerDay'))).toBe(true);
        expect(
          rawDb(h.store)
            .prepare(
              "SELECT COUNT(*) FROM audit WHERE type = 'gateway.denied' AND json_extract(data, '$.deniedBy') = " +
                "'binding.limits.modelTokensPerDay'",
            )
            .pluck()
            .get(),
        ).toBe(refused.length);
        expect(rawDb(h.store).prepare('SELECT COUNT(*) FROM gateway_reservations').pluck().get()).toBe(0);
      } finally {
        await h.close();
      }
    },
    120_000,
  );

  it(
    'a reservation is released when the call fails upstream ' + '(5xx) and when the caller disconnects mid-stream',
    async () => {
      const settled: { status: number; error?: string }[] = [];
      let onSettled: (() => void) | undefined;
      const { handle } = await openRun(host, [scripted({ maxRetries: 0 })], {
        limits: { modelTokensPerRun: 100 },
        onCallRecorded: (c) => {
          settled.push(c);
          onSettled?.();
        },
      });
      const runId = handle.run.claims.runId;
      // A call that reserves 55 of the 100: admitted only while no other such call is held.
      const big = wireCall('anthropic', 'SAY:x', 30);
      const failed = await post(handle, '/v1/messages', wireCall('anthropic', 'FAIL:500', 30).body);
      expect(failed.status).toBe(500);
      expect(reservationsOf(host, runId)).toBe(0);

      const controller = new AbortController();
      const response = await fetch(`${handle.baseUrl}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': handle.token },
        body: JSON.stringify(wireCall('anthropic', 'LONG:20 SLOW:200', 30).body),
        signal: controller.signal,
      });
      const reader = response.body!.getReader();
      await reader.read(); // the first bytes arrived: the call is in flight
      expect(reservationsOf(host, runId)).toBe(1);
      expect((await post(handle, big.path, big.body)).status).toBe(403); // held by the stream
      const gone = new Promise<void>((resolve) => (onSettled = resolve));
      controller.abort();
      await gone;
      expect(settled.at(-1)).toMatchObject({ status: 200, error: 'the caller went away' });
      expect(reservationsOf(host, runId)).toBe(0);
      // The abandoned call is charged what it metered (its input and the output sent so far), not its reservation.
      const abandoned = callsOf(host, runId).at(-1)!;
      expect(Number(abandoned.input_tokens)).toBeGreaterThan(0);
      expect(Number(abandoned.input_tokens) + Number(abandoned.output_tokens)).toBeLessThan(55);
      const after = await post(handle, big.path, big.body);
      expect(after.status, after.text).toBe(200);
      await handle.close();
    },
  );
});

describe(
  'a run token is revoked when the host reads the result, and a ' + "sandboxed run's token works only on its socket",
  () => {
    let host: Host;
    beforeAll(() => (host = tempHost()));
    afterAll(() => host.close());

    it('revoke() cuts an in-flight stream, refuses later calls as revoked and audits them', async () => {
      let onSettled: ((c: { error?: string }) => void) | undefined;
      const { handle } = await openRun(host, [scripted()], { onCallRecorded: (c) => onSettled?.(c) });
      const runId = handle.run.claims.runId;
      const response = await fetch(`${handle.baseUrl}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': handle.token },
        body: JSON.stringify(wireCall('anthropic', 'LONG:20 SLOW:200', 100).body),
      });
      const reader = response.body!.getReader();
      await reader.read();
      const recorded = new Promise<{ error?: string }>((resolve) => (onSettled = resolve));
      handle.revoke();
      expect(await recorded).toMatchObject({ error: `the run token was revoked (run ${runId} returned its result)` });
      // The harness sees a broken stream, not a clean end.
      await expect(
        (async () => {
          for (;;) if ((await reader.read()).done) return 'ended cleanly';
        })(),
      ).rejects.toThrow();
      const later = await post(handle, '/v1/messages', wireCall('anthropic', 'SAY:after', 5).body);
      expect(later.status).toBe(401);
      expect(body<ErrorBody>(later.text).error.message).toBe(
        `paddock: the run token is revoked (run ${runId} returned its result)`,
      );
      expect(auditOf(host, 'gateway.denied').at(-1)).toMatchObject({
        reason: 'token revoked',
        deniedBy: 'gateway.runToken',
        tokenRunId: runId,
      });
      expect(reservationsOf(host, runId)).toBe(0);
      await handle.close();
    });

    it(
      "a bwrap run's token is refused on the host loopback listener (401, audited) and works on its own socket; a " +
        "process run's token works on loopback",
      async () => {
        const { handle: sandboxed } = await openRun(host, [scripted()], { backend: 'bwrap' });
        const { handle: plain } = await openRun(host, [scripted()]);
        const loopback = await host.gateway.loopbackUrl();
        const body = JSON.stringify(wireCall('anthropic', 'SAY:ok', 5).body);
        const onLoopback = (
          token: string,
          path = '/v1/messages',
          headers: Record<string, string> = { 'x-api-key': token },
        ) =>
          fetch(`${loopback}${path}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', ...headers },
            body,
          });
        const before = auditOf(host, 'gateway.denied').length;
        for (const attempt of [
          onLoopback(sandboxed.token),
          onLoopback(sandboxed.token, '/v1/chat/completions', { authorization: `Bearer ${sandboxed.token}` }),
          onLoopback(sandboxed.token, '/mcp/tools'),
        ]) {
          const refused = await attempt;
          expect(refused.status).toBe(401);
          expect(await refused.text()).toContain("valid only on its run's own gateway socket");
        }
        const denials = auditOf(host, 'gateway.denied').slice(before);
        expect(denials).toEqual(
          Array.from({ length: 3 }, (): unknown =>
            expect.objectContaining({
              reason: 'token of a sandboxed run on the loopback listener',
              deniedBy: 'gateway.runToken',
              tokenRunId: sandboxed.run.claims.runId,
            }),
          ),
        );
        expect(JSON.stringify(denials)).not.toContain(sandboxed.token);
        expect(callsOf(host, sandboxed.run.claims.runId)).toEqual([]);
        const viaSocket = await new Promise<number>((resolve, reject) => {
          const req = httpRequest(
            {
              socketPath: sandboxed.socketPath,
              path: '/v1/messages',
              method: 'POST',
              headers: { 'content-type': 'application/json', 'x-api-key': sandboxed.token },
            },
            (res) => {
              res.resume();
              resolve(res.statusCode ?? 0);
            },
          );
          req.on('error', reject);
          req.end(body);
        });
        expect(viaSocket).toBe(200);
        expect((await onLoopback(plain.token)).status).toBe(200);
        await sandboxed.close();
        await plain.close();
      },
    );
  },
);

describe('a provider key reaches the provider and nothing else', () => {
  const CANARY = `sk-ant-api03-canary${'Q'.repeat(40)}gw`;
  let upstream: Server;
  const seen: { key?: string; headers: string[] }[] = [];
  let host: Host;
  let keyFile: string;

  beforeAll(async () => {
    // A fake Anthropic upstream that behaves badly: it echoes the key back in its stream and headers.
    upstream = createServer((req, res) => {
      seen.push({ key: req.headers['x-api-key'] as string | undefined, headers: Object.keys(req.headers) });
      req.resume();
      res.writeHead(200, { 'content-type': 'text/event-stream', 'x-echo-key': String(req.headers['x-api-key']) });
      const ev = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
      res.write(
        ev('message_start', { message: { id: 'm1', model: 'claude-x', usage: { input_tokens: 7, output_tokens: 0 } } }),
      );
      res.write(ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }));
      // The key split across two network writes: the gateway's redaction must still catch it.
      const delta = ev('content_block_delta', {
        index: 0,
        delta: { type: 'text_delta', text: `your key is ${req.headers['x-api-key']}` },
      });
      const middle = delta.indexOf('canary');
      res.write(delta.slice(0, middle));
      res.write(delta.slice(middle));
      res.write(ev('content_block_stop', { index: 0 }));
      res.write(ev('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 9 } }));
      res.end(ev('message_stop', {}));
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const dir = mkdtempSync(join(tmpdir(), 'paddock-gw-key-'));
    keyFile = join(dir, 'anthropic.key');
    writeFileSync(keyFile, `${CANARY}\n`);
    host = tempHost();
  });
  afterAll(async () => {
    await host.close();
    upstream.close();
  });

  it('the gateway injects the key upstream, the harness never sees it, and no stored byte holds it', async () => {
    const model = ModelResourceSchema.parse({
      id: 'claude',
      provider: 'anthropic',
      model: 'claude-x',
      baseUrl: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`,
      apiKey: { file: keyFile },
    });
    const { handle } = await openRun(host, [model]);
    const answer = await post(handle, '/v1/messages?beta=true', { ...anthropicBody('hi'), model: 'claude' });
    expect(answer.status).toBe(200);
    expect(seen.at(-1)?.key).toBe(CANARY);
    // The run token never goes upstream.
    expect(seen.at(-1)?.headers).not.toContain('authorization');
    expect(answer.text).not.toContain(CANARY);
    expect(answer.headers.get('x-echo-key')).toBeNull();
    expect(sseText(answer.text)).toContain('your key is [REDACTED]');
    expect(callsOf(host, handle.run.claims.runId).at(-1)).toMatchObject({ input_tokens: 7, output_tokens: 9 });
    await handle.close();
    rawDb(host.store).pragma('wal_checkpoint(PASSIVE)');
    expect(filesContaining(host.dataDir, CANARY)).toEqual([]);
  });
});

describe('a provider that ignores the output maximum it was sent', () => {
  let upstream: Server;
  const bodies: Record<string, unknown>[] = [];
  let host: Host;
  beforeAll(async () => {
    // A fake OpenAI Responses upstream that bills 5 000 output tokens whatever it was asked for.
    upstream = createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString()));
      req.on('end', () => {
        bodies.push(JSON.parse(raw) as Record<string, unknown>);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id: 'r1',
            model: 'gpt-x',
            status: 'completed',
            output: [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'long' }] }],
            usage: { input_tokens: 10, output_tokens: 5000 },
          }),
        );
      });
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    host = tempHost();
  });
  afterAll(async () => {
    await host.close();
    upstream.close();
  });

  it(
    'is sent the default maximum when the request names none; its overrun is charged in full, audited, and only ' +
      'one call in flight can overrun',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'paddock-gw-overrun-'));
      writeFileSync(join(dir, 'key'), 'sk-test-overrun\n');
      const model = ModelResourceSchema.parse({
        id: 'gpt',
        provider: 'openai',
        api: 'responses',
        model: 'gpt-x',
        baseUrl: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`,
        apiKey: { file: join(dir, 'key') },
      });
      const { handle } = await openRun(host, [model], { limits: { modelTokensPerRun: 6000 } });
      const runId = handle.run.claims.runId;
      const answers = await Promise.all(
        Array.from({ length: 5 }, (_, i) => post(handle, '/v1/responses', { model: 'gpt', input: `hello ${i}` })),
      );
      // One reservation (≈ 4 096 + input) fits in 6 000, two do not: one call goes upstream.
      expect(answers.map((a) => a.status).sort()).toEqual([200, 403, 403, 403, 403]);
      expect(bodies).toHaveLength(1);
      expect(bodies[0]!.max_output_tokens).toBe(DEFAULT_MAX_OUTPUT_TOKENS);
      const [call] = callAudits(host, runId);
      expect(call!.inputTokens + call!.outputTokens).toBe(5010);
      expect(call!.reservedTokens).toBeGreaterThan(DEFAULT_MAX_OUTPUT_TOKENS);
      expect(call).toMatchObject({ overrunTokens: 5010 - call!.reservedTokens });
      // The designed bound when a call overruns: limit + that call's excess, never more.
      const total = callsOf(host, runId).reduce((sum, c) => sum + Number(c.input_tokens) + Number(c.output_tokens), 0);
      expect(total).toBeLessThanOrEqual(6000 + (5010 - call!.reservedTokens));
      // Charged in full: the next call no longer fits.
      const next = await post(handle, '/v1/responses', { model: 'gpt', input: 'again' });
      expect(next.status).toBe(403);
      expect(body<ErrorBody>(next.text).error.message).toContain('this run used 5010 of 6000 tokens');
      await handle.close();
    },
  );
});

describe('Retry-After from a real HTTP provider', () => {
  let upstream: Server;
  const hits: string[] = [];
  let host: Host;
  beforeAll(async () => {
    // Fake upstream: the model name says how to behave.
    upstream = createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        const model = (JSON.parse(raw) as { model: string }).model;
        hits.push(model);
        const tries = hits.filter((m) => m === model).length;
        if (model === 'wait-zero' && tries === 1)
          return res
            .writeHead(429, { 'retry-after': '0', 'content-type': 'application/json' })
            .end('{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}');
        if (model === 'wait-long')
          return res
            .writeHead(429, { 'retry-after': '120', 'content-type': 'application/json' })
            .end('{"type":"error","error":{"type":"rate_limit_error","message":"come back in two minutes"}}');
        res.writeHead(200, { 'content-type': 'application/json' }).end(anthropicMessage(model, 'fine'));
      });
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    process.env.PADDOCK_TEST_RETRY_KEY = 'sk-test-retry-key-0123456789';
    host = tempHost();
  });
  afterAll(async () => {
    await host.close();
    upstream.close();
  });

  it(
    'Retry-After: 0 is retried at once; a Retry-After beyond 30 s is not waited for, the 429 goes back to the ' +
      'harness',
    async () => {
      const baseUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
      const model = (id: string) =>
        ModelResourceSchema.parse({
          id,
          provider: 'anthropic',
          model: id,
          baseUrl,
          apiKey: { env: 'PADDOCK_TEST_RETRY_KEY' },
        });
      const { handle } = await openRun(host, [model('wait-zero'), model('wait-long')]);
      const ok = await post(handle, '/v1/messages', {
        model: 'wait-zero',
        max_tokens: 5,
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(ok.status).toBe(200);
      expect(body<{ content: { text: string }[] }>(ok.text).content[0]?.text).toBe('fine');
      const limited = await post(handle, '/v1/messages', {
        model: 'wait-long',
        max_tokens: 5,
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(limited.status).toBe(429);
      expect(limited.headers.get('retry-after')).toBe('120');
      expect(hits).toEqual(['wait-zero', 'wait-zero', 'wait-long']);
      expect(callsOf(host, handle.run.claims.runId).map((c) => [c.model_id, c.status, c.attempts])).toEqual([
        ['wait-zero', 200, 2],
        ['wait-long', 429, 1],
      ]);
      await handle.close();
    },
  );
});
