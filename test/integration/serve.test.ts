// `paddock serve` end to end over real HTTP: the real command as a child process on a private data folder, real
// runner processes, real tokens made with `paddock tokens create` (docs/http-api.md).
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvalById, insertApproval } from '../../host/state/approvals.js';
import { capabilityGrantById, insertCapabilityGrant } from '../../host/state/capabilityGrants.js';
import { withStore } from '../helpers/approvals.js';
import { paddock } from '../helpers/cli.js';
import { repoPath } from '../helpers/fixtures.js';
import { chatEvent, FIXTURE_RUNNERS } from '../helpers/host.js';
import { startServe, type ServeChild } from '../helpers/serve.js';
import { rendezvous } from '../helpers/rendezvous.js';
import { openSse } from '../helpers/sse.js';
import { ReplayGuard, verifyWebhook } from '../../examples/webhook-receiver/verify.js';

const env = { PADDOCK_RUNNER_DIRS: FIXTURE_RUNNERS };

async function bindings(home: string, rvPath: string): Promise<void> {
  const waits = `runner: waits-for-go, sandbox: process, config: { socket: ${JSON.stringify(rvPath)} }`;
  const yaml = [
    'bindings:',
    '  - { id: echo, runner: echo, sandbox: process, route: { platform: telegram, bot: echo } }',
    '  - { id: chat, runner: echo, sandbox: process, route: { platform: openai, bot: chat } }',
    `  - { id: held, ${waits}, route: { platform: telegram, bot: held }, limits: { maxQueued: 1 } }`,
    `  - { id: steer, ${waits}, route: { platform: telegram, bot: steer }, steering: restart }`,
  ].join('\n');
  writeFileSync(join(home, 'paddock.yaml'), `${yaml}\n`);
  const applied = await paddock(['apply', '-f', join(home, 'paddock.yaml')], { dataDir: home, env });
  expect(applied.exitCode, applied.stderr).toBe(0);
}

async function token(home: string, tenant: string, role: string): Promise<string> {
  const r = await paddock(['tokens', 'create', '--tenant', tenant, '--role', role], { dataDir: home });
  expect(r.exitCode, r.stderr).toBe(0);
  return r.stdout.trim();
}

const tokenId = (t: string) => t.split('_')[1]!;

/** An answer's body: the members the tests read (a problem's or a resource's). */
interface Body {
  [member: string]: unknown;
  status: string;
  runId: string;
  sessionId: string;
  bindingId: string;
  code: string;
  reason: string;
  detail: string;
  requestId: string;
  errors: { path: string; message: string }[];
  transcript: { role: string; text: string }[];
  runs: unknown[];
  links: { run: string; runEvents: string; sessionEvents: string };
}
type Answer = { status: number; headers: Headers; body: Body };

/** One request; the body parsed as JSON when there is one. */
async function call(
  base: string,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  let body: string | undefined;
  if (options.raw !== undefined || options.body !== undefined) {
    headers['content-type'] ??= 'application/json';
    body = options.raw ?? JSON.stringify(options.body);
  }
  const res = await fetch(`${base}${path}`, { method, headers, body });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: (text ? JSON.parse(text) : {}) as Body };
}

/** GET the run until `done(run)` holds: a bounded poll on the run's real status (until the SSE stream lands). */
async function runUntil(base: string, token: string, runId: string, done: (status: string) => boolean) {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const r = await call(base, 'GET', `/v1/runs/${runId}`, { token });
    expect(r.status).toBe(200);
    if (done(r.body.status)) return r.body;
    if (Date.now() > deadline) throw new Error(`run ${runId} still ${r.body.status} after 60 s`);
    await new Promise((resolve) => setTimeout(resolve, 50)); // the poll interval, not a wait for an outcome
  }
}
const ended = (s: string) => s !== 'queued' && s !== 'running';

const home = mkdtempSync(join(tmpdir(), 'paddock-serve-'));
const rv = rendezvous(home);
let server: ServeChild;
const tokens = { platform: '', approver: '', admin: '', otherTenant: '', otherAdmin: '' };

beforeAll(async () => {
  await bindings(home, rv.path);
  tokens.platform = await token(home, 'default', 'platform');
  tokens.approver = await token(home, 'default', 'approver');
  tokens.otherTenant = await token(home, 'other', 'platform');
  tokens.otherAdmin = await token(home, 'other', 'admin');
  tokens.admin = await token(home, 'default', 'admin');
  server = await startServe(home, ['--rate', '1000', '--burst', '1000'], { ...env, PADDOCK_LOG_LEVEL: 'info' });
}, 120_000);
afterAll(async () => {
  expect(await server.stop()).toBe(0);
  rv.close();
});

describe('paddock serve: platform endpoints', () => {
  it('dispatches an event, answers 202 with ids and links, and the run completes (GET /v1/runs/:id)', async () => {
    const event = chatEvent({ bot: 'echo', text: 'hello over http', conversation: { id: 'd1' } });
    const r = await call(server.url, 'POST', '/v1/events', { token: tokens.platform, body: event });
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ status: 'started', bindingId: 'echo', position: 0 });
    expect(r.body.links).toEqual({
      run: `/v1/runs/${r.body.runId}`,
      runEvents: `/v1/runs/${r.body.runId}/events`,
      sessionEvents: `/v1/sessions/${r.body.sessionId}/events`,
    });
    const run = await runUntil(server.url, tokens.platform, r.body.runId, ended);
    expect(run).toMatchObject({
      id: r.body.runId,
      sessionId: r.body.sessionId,
      bindingId: 'echo',
      status: 'completed',
    });
    const session = await call(server.url, 'GET', `/v1/sessions/${r.body.sessionId}`, { token: tokens.approver });
    expect(session.status).toBe(200);
    expect(session.body.transcript.map((t: { role: string; text: string }) => [t.role, t.text])).toEqual([
      ['user', 'hello over http'],
      ['assistant', 'hello over http'],
    ]);
  });

  it('streams a run over SSE: ends after run.ended; a reconnect with Last-Event-ID gets exactly the rest', async () => {
    const event = chatEvent({ bot: 'echo', text: 'one two three', conversation: { id: 'sse1' } });
    const r = await call(server.url, 'POST', '/v1/events', { token: tokens.platform, body: event });
    expect(r.status).toBe(202);
    const auth = { authorization: `Bearer ${tokens.platform}` };
    const whole = await openSse(`${server.url}${r.body.links.runEvents}`, { headers: auth });
    expect(whole.status).toBe(200);
    expect(await whole.closed).toBe('end');
    const types = whole.messages.map((m) => m.event);
    expect(types[0]).toBe('run.queued');
    expect(types.at(-1)).toBe('run.ended');
    const seqs = whole.messages.map((m) => Number(m.id));
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    // Resume after the second event: exactly the rest, in order.
    const rest = await openSse(`${server.url}${r.body.links.runEvents}`, {
      headers: auth,
      lastEventId: String(seqs[1]),
    });
    expect(await rest.closed).toBe('end');
    expect(rest.messages.map((m) => Number(m.id))).toEqual(seqs.slice(2));
    // Another tenant's token, and a bad start, are refused before any stream.
    const other = await call(server.url, 'GET', r.body.links.runEvents, { token: tokens.otherTenant });
    expect(other.status).toBe(404);
    const bad = await call(server.url, 'GET', `${r.body.links.sessionEvents}?after=x`, { token: tokens.platform });
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toEqual([{ path: 'query.after', message: 'must be decimal digits (a seq)' }]);
    // Another spelling of the key is refused too, never taken as "from the start".
    const bracketed = await call(server.url, 'GET', `${r.body.links.sessionEvents}?after[]=5`, {
      token: tokens.platform,
    });
    expect(bracketed.status).toBe(400);
  });

  it('a redelivered event id answers duplicate with the first ids, never runs twice (also concurrent)', async () => {
    const event = chatEvent({ bot: 'echo', conversation: { id: 'dup' } });
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => call(server.url, 'POST', '/v1/events', { token: tokens.platform, body: event })),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(6).fill(202));
    expect(new Set(answers.map((a) => a.body.runId)).size).toBe(1);
    expect(answers.filter((a) => a.body.status === 'duplicate')).toHaveLength(5);
    await runUntil(server.url, tokens.platform, answers[0]!.body.runId, ended);
    const again = await call(server.url, 'POST', '/v1/events', { token: tokens.platform, body: event });
    expect(again.body).toMatchObject({ status: 'duplicate', runId: answers[0]!.body.runId });
    const session = await call(server.url, 'GET', `/v1/sessions/${again.body.sessionId}`, { token: tokens.platform });
    expect(session.body.runs).toHaveLength(1);
  });

  it('cancels a running run (202), which ends cancelled; a second cancel is 409', async () => {
    const r = await call(server.url, 'POST', '/v1/events', {
      token: tokens.platform,
      body: chatEvent({ bot: 'held', conversation: { id: 'cancel-me' } }),
    });
    expect(r.body.status).toBe('started');
    await rv.arrived(r.body.runId);
    const cancel = await call(server.url, 'POST', `/v1/runs/${r.body.runId}/cancel`, {
      token: tokens.platform,
      body: { reason: 'test says stop' },
    });
    expect(cancel.status).toBe(202);
    expect(cancel.body).toEqual({ runId: r.body.runId, requested: true });
    const run = await runUntil(server.url, tokens.platform, r.body.runId, ended);
    expect(run.status).toBe('cancelled');
    const twice = await call(server.url, 'POST', `/v1/runs/${r.body.runId}/cancel`, { token: tokens.platform });
    expect(twice.status, JSON.stringify(twice.body)).toBe(409);
    expect(twice.body).toMatchObject({ code: 'conflict', runStatus: 'cancelled' });
  });

  it('a follow-up message under steering "queue" waits behind the active run; a full queue answers 429', async () => {
    const first = await call(server.url, 'POST', '/v1/events', {
      token: tokens.platform,
      body: chatEvent({ bot: 'held', conversation: { id: 'follow-q' }, text: 'first' }),
    });
    await rv.arrived(first.body.runId);
    const follow = await call(server.url, 'POST', `/v1/sessions/${first.body.sessionId}/messages`, {
      token: tokens.platform,
      body: { id: 'follow-1', text: 'second' },
    });
    expect(follow.status).toBe(202);
    expect(follow.body).toMatchObject({ status: 'queued', position: 1, sessionId: first.body.sessionId });
    // The binding allows one waiting message: the next is refused, with Retry-After.
    const full = await call(server.url, 'POST', `/v1/sessions/${first.body.sessionId}/messages`, {
      token: tokens.platform,
      body: { id: 'follow-2', text: 'third' },
    });
    expect(full.status).toBe(429);
    expect(full.headers.get('retry-after')).toBe('1');
    expect(full.body).toMatchObject({ code: 'queue_full', reason: 'queue_full' });
    rv.go(first.body.runId);
    await rv.arrived(follow.body.runId); // started only now
    expect(
      (await call(server.url, 'GET', `/v1/runs/${first.body.runId}`, { token: tokens.platform })).body.status,
    ).toBe('completed');
    rv.go(follow.body.runId);
    expect((await runUntil(server.url, tokens.platform, follow.body.runId, ended)).status).toBe('completed');
    const session = await call(server.url, 'GET', `/v1/sessions/${first.body.sessionId}`, { token: tokens.platform });
    expect(
      session.body.transcript.filter((t: { role: string }) => t.role === 'user').map((t: { text: string }) => t.text),
    ).toEqual(['first', 'second']);
  });

  it('a follow-up message under steering "restart" supersedes the active run', async () => {
    const first = await call(server.url, 'POST', '/v1/events', {
      token: tokens.platform,
      body: chatEvent({ bot: 'steer', conversation: { id: 'follow-r' }, text: 'first' }),
    });
    await rv.arrived(first.body.runId);
    const follow = await call(server.url, 'POST', `/v1/sessions/${first.body.sessionId}/messages`, {
      token: tokens.platform,
      body: { id: 'restart-1', parts: [{ type: 'text', text: 'instead' }] },
    });
    expect(follow.status).toBe(202);
    const old = await runUntil(server.url, tokens.platform, first.body.runId, ended);
    expect(old.status).toBe('cancelled');
    await rv.arrived(follow.body.runId);
    rv.go(follow.body.runId);
    expect((await runUntil(server.url, tokens.platform, follow.body.runId, ended)).status).toBe('completed');
  });

  it('refusals keep their reasons: no binding routes the event → 422 no_binding', async () => {
    const r = await call(server.url, 'POST', '/v1/events', {
      token: tokens.platform,
      body: chatEvent({ bot: 'nobody-routes-this' }),
    });
    expect(r.status).toBe(422);
    expect(r.body).toMatchObject({ code: 'no_binding', type: 'https://paddock.dev/problems/no_binding' });
  });
});

describe('paddock serve: tenancy', () => {
  it("another tenant's token gets 404 for every id route, exactly like an id that does not exist", async () => {
    const mine = await call(server.url, 'POST', '/v1/events', {
      token: tokens.platform,
      body: chatEvent({ bot: 'held', conversation: { id: 'tenant-b' } }),
    });
    await rv.arrived(mine.body.runId);
    const hook = await call(server.url, 'POST', '/v1/webhooks', {
      token: tokens.platform,
      body: { url: 'http://127.0.0.1:9/paddock-hook' },
    });
    expect(hook.status).toBe(201);
    // An approval of the running run and a capability grant, both of this tenant (written as a run's host and an
    // approver would, through another connection to the data folder).
    const { approval, grant } = withStore(home, (store) => {
      const at = new Date().toISOString();
      const row = insertApproval(store, {
        tenant: 'default',
        runId: mine.body.runId,
        sessionId: mine.body.sessionId,
        bindingId: mine.body.bindingId,
        via: 'runner:held',
        effect: 'exec',
        target: { kind: 'command', value: 'make held' },
        summary: 'held',
        dataClass: null,
        destination: null,
        risk: { score: 30, level: 'medium', reasons: [] },
        goalRevision: 0,
        groupId: null,
        requestedLifetime: 'once',
        createdAt: at,
        expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
      });
      const granted = insertCapabilityGrant(store, {
        capability: 'exec',
        scope: { kind: 'command', value: 'make held' },
        lifetime: 'binding',
        tenant: 'default',
        bindingId: mine.body.bindingId,
        grantor: 'user:test',
        createdAt: at,
      });
      return { approval: row.id, grant: granted.id };
    });
    // Every route with an id, from the route table (the served OpenAPI document), so a new route is covered.
    const doc = (await call(server.url, 'GET', '/openapi.json')).body as unknown as {
      paths: Record<string, Record<string, { tags?: string[] }>>;
    };
    const bodies: Record<string, unknown> = {
      'POST /v1/runs/{id}/cancel': {},
      'POST /v1/runs/{id}/resolve': { as: 'failed' },
      'POST /v1/bindings/{id}/enable': {},
      'POST /v1/bindings/{id}/disable': { cancelActive: true },
      'POST /v1/sessions/{id}/messages': { id: 'intruder-1', text: 'hi' },
      'DELETE /v1/webhooks/{id}': undefined,
      'POST /v1/approvals/{id}/approve': {},
      'POST /v1/approvals/{id}/deny': {},
      'POST /v1/grants/{id}/revoke': {},
      'POST /v1/tokens/{id}/revoke': undefined,
    };
    const idRoutes = Object.entries(doc.paths).flatMap(([path, ops]) =>
      path.includes('{id}')
        ? Object.entries(ops).map(([m, op]) => ({ method: m.toUpperCase(), path, admin: op.tags?.includes('admin') }))
        : [],
    );
    expect(idRoutes.length).toBeGreaterThanOrEqual(4);
    for (const { method, path, admin } of idRoutes) {
      const id = path.startsWith('/v1/runs/')
        ? mine.body.runId
        : path.startsWith('/v1/sessions/')
          ? mine.body.sessionId
          : path.startsWith('/v1/webhooks/')
            ? (hook.body.id as string)
            : path.startsWith('/v1/bindings/')
              ? mine.body.bindingId // `held`, whose run is running: a disable with cancelActive must not reach it
              : path.startsWith('/v1/approvals/')
                ? approval
                : path.startsWith('/v1/grants/')
                  ? grant
                  : path.startsWith('/v1/tokens/')
                    ? tokens.approver.slice(4, 16) // the default tenant's approver token: it must keep working
                    : undefined;
      if (id === undefined) throw new Error(`tenancy test: say which id ${path} takes`);
      const key = `${method} ${path}`;
      if (method !== 'GET' && !(key in bodies)) throw new Error(`tenancy test: give a valid body for ${key}`);
      const withId = path.replace('{id}', id);
      const missing = path.replace(
        '{id}',
        id.replace(/.$/, (c: string) => (c === 'x' ? 'y' : 'x')),
      );
      for (const t of [tokens.otherTenant, tokens.otherAdmin]) {
        const theirs = await call(server.url, method, withId, { token: t, body: bodies[key] });
        const none = await call(server.url, method, missing, { token: t, body: bodies[key] });
        // An admin or approver route refuses the platform token for its role first, the same way whatever the id.
        const roleGated = admin || path.startsWith('/v1/approvals/') || path.startsWith('/v1/grants/');
        const expected = roleGated && t === tokens.otherTenant ? 403 : 404;
        expect([key, theirs.status], JSON.stringify(theirs.body)).toEqual([key, expected]);
        expect(none.status).toBe(expected);
        const strip = (b: Record<string, unknown>) => ({
          ...b,
          detail: undefined,
          instance: undefined,
          requestId: undefined,
        });
        expect(strip(theirs.body)).toEqual(strip(none.body));
        // (A binding route's detail and instance name the id the client sent itself.)
        const shown = path.startsWith('/v1/bindings/') ? strip(theirs.body) : theirs.body;
        expect(JSON.stringify(shown)).not.toContain(mine.body.bindingId === 'held' ? 'held' : '???');
      }
    }
    // Nothing happened to the approval, the grant or the token.
    withStore(home, (store) => {
      expect(approvalById(store, approval)!.status).toBe('pending');
      expect(capabilityGrantById(store, grant)!.revokedAt).toBeUndefined();
    });
    expect((await call(server.url, 'GET', '/v1/whoami', { token: tokens.approver })).status).toBe(200);
    // Nothing happened to the run: still running, never cancelled.
    const run = await call(server.url, 'GET', `/v1/runs/${mine.body.runId}`, { token: tokens.platform });
    expect(run.body.status).toBe('running');
    const session = await call(server.url, 'GET', `/v1/sessions/${mine.body.sessionId}`, { token: tokens.platform });
    expect(session.body.runs).toHaveLength(1);
    rv.go(mine.body.runId);
    await runUntil(server.url, tokens.platform, mine.body.runId, ended);
  });

  it("a duplicate of another tenant's event id never reveals its ids", async () => {
    const event = chatEvent({ bot: 'echo', conversation: { id: 'dup-tenant' } });
    const mine = await call(server.url, 'POST', '/v1/events', { token: tokens.platform, body: event });
    expect(mine.status).toBe(202);
    const theirs = await call(server.url, 'POST', '/v1/events', { token: tokens.otherTenant, body: event });
    expect(theirs.status).toBe(422);
    expect(JSON.stringify(theirs.body)).not.toContain(mine.body.runId);
    expect(JSON.stringify(theirs.body)).not.toContain(mine.body.sessionId);
  });
});

describe('paddock serve: authentication, roles, errors', () => {
  it('refuses missing, malformed, unknown, expired and revoked tokens with 401, the reason, and no echo', async () => {
    const expired = await token(home, 'default', 'platform');
    const db = new Database(join(home, 'paddock.db'));
    db.pragma('busy_timeout = 5000');
    db.prepare('UPDATE api_tokens SET expires_at = ? WHERE id = ?').run('2020-01-01T00:00:00.000Z', tokenId(expired));
    db.close();
    const revoked = await token(home, 'default', 'platform');
    expect((await call(server.url, 'GET', '/v1/runs/run_x', { token: revoked })).status).toBe(404); // valid until…
    // …another process revokes it: the server sees it on the next request.
    expect((await paddock(['tokens', 'revoke', tokenId(revoked)], { dataDir: home })).exitCode).toBe(0);
    const unknown = `pdk_${'0'.repeat(12)}_${'A'.repeat(43)}`;
    const cases: [string, Record<string, string>, string][] = [
      ['missing', {}, 'missing'],
      ['basic', { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }, 'invalid'],
      ['not a paddock token', { authorization: 'Bearer canary-not-a-token-1234' }, 'invalid'],
      ['unknown', { authorization: `Bearer ${unknown}` }, 'invalid'],
      ['wrong secret', { authorization: `Bearer ${tokens.platform.slice(0, -4)}AAAA` }, 'invalid'],
      ['expired', { authorization: `Bearer ${expired}` }, 'expired'],
      ['revoked', { authorization: `Bearer ${revoked}` }, 'revoked'],
    ];
    for (const [name, headers, reason] of cases) {
      const r = await call(server.url, 'GET', '/v1/runs/run_x', { headers });
      expect([name, r.status, r.body.code, r.body.reason]).toEqual([name, 401, 'unauthorized', reason]);
      expect(r.headers.get('www-authenticate')).toBe('Bearer');
      expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(r.body.detail).toMatch(new RegExp(`^${reason}`));
      const text = JSON.stringify(r.body);
      for (const secret of [expired, revoked, unknown, 'canary-not-a-token', tokens.platform.slice(20)])
        expect(text).not.toContain(secret);
    }
  });

  it('a token of the wrong role gets 403 naming the role needed', async () => {
    const r = await call(server.url, 'POST', '/v1/events', {
      token: tokens.approver,
      body: chatEvent({ bot: 'echo' }),
    });
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ code: 'forbidden', role: 'approver', requiredRole: ['platform', 'admin'] });
    const cancel = await call(server.url, 'POST', '/v1/runs/run_x/cancel', { token: tokens.approver, body: {} });
    expect(cancel.status).toBe(403);
  });

  it('a malformed body is 400 naming every bad field at once; bad JSON 400; an oversized body 413', async () => {
    const good = chatEvent({ bot: 'echo' });
    const bad = {
      ...good,
      id: 7,
      conversation: { type: 'room', id: '' },
      message: { parts: [{ type: 'text', text: 5 }] },
    };
    const r = await call(server.url, 'POST', '/v1/events', { token: tokens.platform, body: bad });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('invalid_request');
    const paths = (r.body.errors as { path: string }[]).map((e) => e.path);
    for (const p of ['id', 'conversation.type', 'conversation.id', 'message.parts[0].text'])
      expect(paths, JSON.stringify(r.body.errors)).toContain(p);
    const follow = await call(server.url, 'POST', '/v1/sessions/ses_x/messages', {
      token: tokens.platform,
      body: { text: '' },
    });
    expect(follow.status).toBe(400);
    expect((follow.body.errors as { path: string }[]).map((e) => e.path)).toEqual(
      expect.arrayContaining(['id', 'text']),
    );
    const json = await call(server.url, 'POST', '/v1/events', { token: tokens.platform, raw: '{"id": ' });
    expect([json.status, json.body.code]).toEqual([400, 'invalid_request']);
    const big = await call(server.url, 'POST', '/v1/events', {
      token: tokens.platform,
      raw: JSON.stringify({ ...good, pad: 'x'.repeat(1024 * 1024) }),
    });
    expect([big.status, big.body.code]).toEqual([413, 'payload_too_large']);
    // JSON only: a text/plain body is 415, not a string the schema refuses.
    const plain = await call(server.url, 'POST', '/v1/events', {
      token: tokens.platform,
      raw: 'hello',
      headers: { 'content-type': 'text/plain' },
    });
    expect([plain.status, plain.body.code]).toEqual([415, 'unsupported_media_type']);
  });

  it('an unknown route is a 404 problem; the request id is echoed when well-formed, else replaced', async () => {
    const r = await call(server.url, 'GET', '/v1/nothing-here', {
      token: tokens.platform,
      headers: { 'x-request-id': 'abc.DEF-12_3' },
    });
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({
      code: 'not_found',
      requestId: 'abc.DEF-12_3',
      type: 'https://paddock.dev/problems/not_found',
    });
    expect(r.headers.get('x-request-id')).toBe('abc.DEF-12_3');
    for (const bad of ['a'.repeat(65), 'has space', 'semi;colon', '../etc']) {
      const x = await call(server.url, 'GET', '/healthz', { headers: { 'x-request-id': bad } });
      expect(x.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    }
    const unauth = await call(server.url, 'GET', '/v1/runs/run_x', { headers: { 'x-request-id': 'req-401' } });
    expect([unauth.status, unauth.headers.get('x-request-id'), unauth.body.requestId]).toEqual([
      401,
      'req-401',
      'req-401',
    ]);
  });

  it('health, readiness and the OpenAPI document need no token; the served document is the committed one', async () => {
    expect((await call(server.url, 'GET', '/healthz')).body).toEqual({ status: 'ok' });
    expect((await call(server.url, 'GET', '/readyz')).status).toBe(200);
    const doc = await call(server.url, 'GET', '/openapi.json');
    expect(doc.body).toEqual(JSON.parse(readFileSync(repoPath('docs/openapi.json'), 'utf8')));
  });

  it('request logs carry request ids and never a token', async () => {
    await call(server.url, 'GET', '/v1/runs/run_x', {
      token: tokens.platform,
      headers: { 'x-request-id': 'log-check-1' },
    });
    await server.waitFor(/"requestId":"log-check-1"/);
    const log = server.stderr();
    for (const t of Object.values(tokens)) {
      expect(log).not.toContain(t);
      expect(log).not.toContain(t.slice(-43)); // the secret (base64url: it may itself hold '_')
    }
    expect(log).not.toMatch(/authorization/i);
  });
});

describe('paddock serve: metrics and webhooks', () => {
  it("GET /metrics: the operator tenant's admin reads text that moved with the runs; others cannot", async () => {
    const res = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${tokens.admin}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    const text = await res.text();
    expect(text).toMatch(/^paddock_runs_total\{outcome="completed",binding="echo"\} [1-9]\d*$/m);
    expect(text).toMatch(/^paddock_http_requests_total\{route="\/v1\/events",status="202"\} [1-9]\d*$/m);
    // A parameterised route is its registered pattern; the id in the URL (`run_x`, requested above) is not.
    expect(text).toMatch(/^paddock_http_requests_total\{route="\/v1\/runs\/:id",status="\d{3}"\} [1-9]\d*$/m);
    expect(text).not.toContain('run_x');
    expect((await call(server.url, 'GET', '/metrics', { token: tokens.otherAdmin })).status).toBe(404);
    expect((await call(server.url, 'GET', '/metrics', { token: tokens.platform })).status).toBe(403);
    expect((await call(server.url, 'GET', '/metrics')).status).toBe(401);
  });

  it("a webhook receives the run's outcome and reply, signed, retried after the receiver fails twice", async () => {
    const received: { headers: Record<string, string | string[] | undefined>; body: Buffer }[] = [];
    let arrived!: () => void;
    const got = new Promise<void>((resolve) => (arrived = resolve));
    // The receiver fails the first two attempts (500), then takes the third.
    const receiver = createHttpServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ headers: req.headers, body: Buffer.concat(chunks) });
        if (received.length <= 2) return void res.writeHead(500).end();
        res.writeHead(204).end();
        arrived();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const port = (receiver.address() as { port: number }).port;
      const hook = await call(server.url, 'POST', '/v1/webhooks', {
        token: tokens.platform,
        body: { url: `http://127.0.0.1:${port}/hook` },
      });
      expect(hook.status).toBe(201);
      const event = chatEvent({ bot: 'echo', text: 'hooked reply', conversation: { id: 'hook1' } });
      const r = await call(server.url, 'POST', '/v1/events', { token: tokens.platform, body: event });
      await got;
      expect(received).toHaveLength(3);
      // One delivery, sent three times: the same id and body, each attempt signed anew (its own timestamp).
      expect(new Set(received.map((x) => x.headers['paddock-webhook-id'])).size).toBe(1);
      expect(new Set(received.map((x) => x.body.toString())).size).toBe(1);
      const first = received[2]!;
      const verdict = verifyWebhook({
        secret: hook.body.secret as string,
        headers: first.headers,
        body: first.body,
        guard: new ReplayGuard(),
      });
      expect(verdict.ok).toBe(true);
      const log = await call(server.url, 'GET', `/v1/webhooks/${hook.body.id as string}/deliveries`, {
        token: tokens.platform,
      });
      const [delivery] = log.body.deliveries as { state: string; attempts: number; log: { status: number }[] }[];
      expect(delivery).toMatchObject({ state: 'delivered', attempts: 3 });
      expect(delivery!.log.map((a) => a.status)).toEqual([500, 500, 204]);
      expect(JSON.parse(first.body.toString())).toMatchObject({
        type: 'run.ended',
        runId: r.body.runId,
        outcome: { status: 'completed' },
        reply: { text: 'hooked reply' },
      });
      await call(server.url, 'DELETE', `/v1/webhooks/${hook.body.id as string}`, { token: tokens.platform });
    } finally {
      await new Promise((resolve) => receiver.close(resolve));
    }
  });
});

describe('paddock serve: the OpenAI-compatible endpoint', () => {
  it('the official openai client gets a reply from a binding, whole and streamed', async () => {
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: tokens.platform, maxRetries: 0 });
    const whole = await client.chat.completions.create({
      model: 'chat',
      messages: [{ role: 'user', content: 'whole answer' }],
    });
    expect(whole.choices[0]!.message.content).toBe('whole answer');
    const stream = await client.chat.completions.create(
      { model: 'chat', messages: [{ role: 'user', content: 'streamed answer' }], stream: true },
      { headers: { 'x-paddock-conversation': 'openai-child' } },
    );
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('streamed answer');
    // Another tenant's token does not see the binding as a model.
    const other = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: tokens.otherTenant, maxRetries: 0 });
    await expect(
      other.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toMatchObject({ status: 404 });
  });
});

describe('paddock serve: rate limit and stop', () => {
  it('a token over its rate gets 429 rate_limited with Retry-After; another token is unaffected', async () => {
    const slow = await startServe(home, ['--rate', '1', '--burst', '2'], env);
    try {
      const codes = [];
      for (let i = 0; i < 3; i++) codes.push(await call(slow.url, 'GET', '/v1/runs/run_x', { token: tokens.platform }));
      expect(codes.map((c) => c.status)).toEqual([404, 404, 429]);
      expect(codes[2]!.body.code).toBe('rate_limited');
      expect(Number(codes[2]!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect((await call(slow.url, 'GET', '/v1/runs/run_x', { token: tokens.approver })).status).toBe(404);
    } finally {
      expect(await slow.stop()).toBe(0);
    }
  });

  const stops = [
    { mode: 'drain', to: 'serve' },
    { mode: 'cancel', to: 'serve' },
    // A service manager's stop (systemd's KillMode=control-group) signals every process of the group: the runner
    // spawner must not die of it, or the run being drained ends crashed (the spawner attack's A10).
    { mode: 'drain', to: 'its process group' },
  ] as const;
  for (const { mode, to } of stops) {
    const fate = mode === 'drain' ? 'completes' : 'is cancelled';
    it(`SIGTERM to ${to}, a run active: --on-stop ${mode} → the run ${fate}, exit 0, store closed`, async () => {
      const own = await startServe(home, ['--on-stop', mode], env);
      const r = await call(own.url, 'POST', '/v1/events', {
        token: tokens.platform,
        body: chatEvent({ bot: 'held', conversation: { id: `stop-${mode}` } }),
      });
      expect(r.body.status).toBe('started');
      await rv.arrived(r.body.runId);
      if (to === 'serve') own.child.kill('SIGTERM');
      else process.kill(-own.child.pid!, 'SIGTERM');
      await own.waitFor(/SIGTERM: stopping \(1 run\(s\) held/);
      // New requests are not served: refused at the socket or answered 503 shutting_down.
      const late = await call(own.url, 'GET', '/readyz').catch((e: Error) => e);
      if (!(late instanceof Error)) expect([late.status, late.body.code]).toEqual([503, 'shutting_down']);
      if (mode === 'drain') rv.go(r.body.runId);
      const exit = await own.child;
      expect(exit.exitCode, exit.stderr as string).toBe(0);
      expect(exit.stderr).toContain('paddock serve: stopped');
      const run = await call(server.url, 'GET', `/v1/runs/${r.body.runId}`, { token: tokens.platform });
      expect(run.body.status).toBe(mode === 'drain' ? 'completed' : 'cancelled');
      const verify = await paddock(['audit', 'verify'], { dataDir: home });
      expect(verify.exitCode, verify.stdout + verify.stderr).toBe(0);
    });
  }
});
