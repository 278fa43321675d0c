import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa, execaSync } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { ReplayGuard, verifyWebhook } from '../../examples/webhook-receiver/verify.js';
import {
  createWebhook,
  listDeliveries,
  listWebhooks,
  parseWebhookAllow,
  removeWebhook,
  WebhookWorker,
  type WebhookWorkerOptions,
} from '../../host/api/webhooks/index.js';
import { Store } from '../../host/state/store.js';
import { MAX_REPLY_CHARS, type WebhookBody } from '../../host/api/webhooks/body.js';
import { sweepEndedRuns } from '../../host/api/webhooks/enqueue.js';
import { claimDue, deliveryById } from '../../host/state/webhooks.js';
import { bundleHostEntry } from '../helpers/hostBundle.js';
import { repoPath } from '../helpers/fixtures.js';
import { rawDb } from '../helpers/rawDb.js';
import { tempStore } from '../helpers/store.js';
import { chatEvent, tempHost } from '../helpers/host.js';
import { webhookTarget, type Answer } from '../helpers/webhookTarget.js';

const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

/** A target that closes after the test. */
async function target(script: Answer[] = [], host?: string) {
  const t = await webhookTarget(script, host);
  cleanup.push(t.close);
  return t;
}

/** A store in a fresh data folder, closed after the test. */
function store(): Store {
  const { store } = tempStore();
  cleanup.push(() => store.close());
  return store;
}

/** A worker whose retries are due at once (backoff 0) unless told otherwise, stopped after the test. */
function worker(s: Store, options: WebhookWorkerOptions = {}) {
  const lines: string[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(line) });
  const w = new WebhookWorker(s, { backoffMs: () => 0, logger, ...options });
  cleanup.push(() => w.stop());
  return { worker: w, lines };
}

let conversation = 0;
/** A run that ended in `s` (events appended as a host would): a session of binding `b1`, one reply. */
function endedRun(s: Store, reply = 'the answer is 42', status: 'completed' | 'failed' = 'completed'): string {
  conversation += 1;
  const { sessionId } = s.ensureSession('default', 'b1', `telegram:support:c${conversation}`);
  const runId = `run_test${conversation}_${process.pid}`;
  s.append(sessionId, [
    { type: 'run.queued', runId, data: { runner: 'echo', goalRevision: 0, attempt: 1, bindingId: 'b1' } },
    // A host records a run's start before any of its updates (docs/decisions.md SS2): a run is read by that.
    { type: 'run.started', runId, data: { pid: 4242, pidStart: 1, recoveryDelivered: [] } },
    {
      type: 'run.update',
      runId,
      data: { runnerSeq: 1, update: { kind: 'message', messageId: 'm1', parts: [{ type: 'text', text: reply }] } },
    },
    { type: 'run.ended', runId, data: { status, reason: `${status} by test`, exitCode: 0, signal: null } },
  ]);
  return runId;
}

const register = (s: Store, url: string, events?: string[], tenant = 'default') =>
  createWebhook(s, { tenant, url, events, actor: 'token:test' });

describe('webhook delivery', () => {
  it("POSTs a real run's reply and outcome, signed so the example receiver verifies it", async () => {
    const host = tempHost();
    cleanup.push(() => host.close());
    host.apply({ bindings: [{ id: 'hook', runner: 'echo', sandbox: 'process', route: { bot: 'hook' } }] });
    const t = await target();
    const hook = register(host.store, t.url);
    let delivered!: () => void;
    const recorded = new Promise<void>((resolve) => (delivered = resolve));
    const { worker: w } = worker(host.store, { onResult: (r) => r === 'delivered' && delivered() });
    w.start();
    const ticket = await host.dispatcher.dispatch(chatEvent({ bot: 'hook', text: 'hello webhook world' }));
    if (ticket.status === 'duplicate') throw new Error('duplicate');
    await ticket.done;
    await recorded;
    const [request] = t.received;
    expect(request!.path).toBe('/hooks/paddock?via=test');
    expect(request!.headers['content-type']).toBe('application/json');
    const verified = verifyWebhook({
      secret: hook.secret,
      headers: request!.headers,
      body: request!.body,
      guard: new ReplayGuard(),
    });
    expect(verified).toMatchObject({ ok: true });
    const body = JSON.parse(request!.body.toString()) as Record<string, unknown>;
    expect(body).toEqual({
      type: 'run.ended',
      deliveryId: request!.headers['paddock-webhook-id'],
      tenant: 'default',
      runId: ticket.runId,
      sessionId: ticket.sessionId,
      bindingId: 'hook',
      outcome: { status: 'completed', reason: expect.any(String) },
      reply: { text: 'hello webhook world' },
      at: host.store.run(ticket.runId)!.endedAt,
    });
    const deliveries = listDeliveries(host.store, 'default', hook.id);
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]).toMatchObject({ state: 'delivered', attempts: 1, lastStatus: 204, runId: ticket.runId });
  });

  it('retries a 500 and a reset connection, delivers on the third attempt, same bytes, 3 attempts logged', async () => {
    const s = store();
    const t = await target([{ status: 500 }, 'reset']);
    const hook = register(s, t.url);
    const runId = endedRun(s);
    const { worker: w } = worker(s);
    expect(await w.runDue()).toBe(3);
    expect(t.received).toHaveLength(3);
    expect(new Set(t.received.map((r) => r.body.toString())).size).toBe(1);
    for (const r of t.received)
      expect(
        verifyWebhook({ secret: hook.secret, headers: r.headers, body: r.body, guard: new ReplayGuard() }).ok,
      ).toBe(true);
    const [d] = listDeliveries(s, 'default', hook.id);
    expect(d).toMatchObject({ runId, state: 'delivered', attempts: 3, lastStatus: 204, lastError: null });
    expect(d!.log.map((a) => [a.attempt, a.status])).toEqual([
      [1, 500],
      [2, null],
      [3, 204],
    ]);
    expect(d!.log[0]!.error).toBe('answered 500');
    expect(d!.log[1]!.error).toMatch(/ECONNRESET|socket hang up/);
  });

  it('times out a receiver that never answers, then retries', async () => {
    const s = store();
    const t = await target(['hang']);
    const hook = register(s, t.url);
    endedRun(s);
    const { worker: w } = worker(s, { timeoutMs: 300 });
    await w.runDue();
    const [d] = listDeliveries(s, 'default', hook.id);
    expect(d!.log.map((a) => a.error)).toEqual(['timed out after 300 ms', null]);
    expect(d!.state).toBe('delivered');
  });

  it('gives up after maxAttempts and schedules retries by the backoff it was given', async () => {
    const s = store();
    const t = await target(Array<Answer>(10).fill({ status: 503 }));
    const hook = register(s, t.url);
    endedRun(s);
    const { worker: w } = worker(s, { maxAttempts: 3 });
    await w.runDue();
    expect(listDeliveries(s, 'default', hook.id)[0]).toMatchObject({ state: 'failed', attempts: 3, lastStatus: 503 });

    const slow = store();
    const t2 = await target([{ status: 500 }]);
    const hook2 = register(slow, t2.url);
    endedRun(slow);
    const now = 1_900_000_000_000;
    const { worker: w2 } = worker(slow, { backoffMs: (n) => n * 60_000, now: () => now });
    expect(await w2.runDue()).toBe(1); // the retry is not due yet
    expect(listDeliveries(slow, 'default', hook2.id)[0]).toMatchObject({
      state: 'pending',
      attempts: 1,
      nextAttemptAt: now + 60_000,
    });
  });

  it('the verifier refuses a tampered body, a moved timestamp, a stale one and a replayed id', async () => {
    const s = store();
    const t = await target();
    const hook = register(s, t.url);
    endedRun(s);
    await worker(s).worker.runDue();
    const { headers, body } = t.received[0]!;
    const check = (over: { headers?: object; body?: Buffer; nowS?: number; guard?: ReplayGuard }) =>
      verifyWebhook({
        secret: hook.secret,
        headers: { ...headers, ...over.headers },
        body: over.body ?? body,
        guard: over.guard ?? new ReplayGuard(),
        nowS: over.nowS,
      });
    const ts = Number(headers['paddock-webhook-timestamp']);
    expect(check({}).ok).toBe(true);
    const flipped = Buffer.from(body);
    flipped.writeUInt8(flipped.readUInt8(flipped.length - 2) ^ 1, flipped.length - 2);
    expect(check({ body: flipped })).toEqual({ ok: false, reason: 'bad-signature' });
    // The same JSON, re-serialized: not the signed bytes.
    expect(check({ body: Buffer.from(JSON.stringify(JSON.parse(body.toString()), null, 1)) })).toEqual({
      ok: false,
      reason: 'bad-signature',
    });
    expect(check({ headers: { 'paddock-webhook-timestamp': String(ts + 1) } })).toEqual({
      ok: false,
      reason: 'bad-signature',
    });
    expect(check({ nowS: ts + 301 })).toEqual({ ok: false, reason: 'stale' });
    expect(check({ body, headers: {}, nowS: ts - 301 })).toEqual({ ok: false, reason: 'stale' });
    const guard = new ReplayGuard();
    guard.add(String(headers['paddock-webhook-id']), ts);
    expect(check({ guard })).toEqual({ ok: false, reason: 'replay' });
    expect(check({ guard, headers: { 'paddock-webhook-id': 'whd_fresh' } })).toEqual({ ok: false, reason: 'bad-body' });
    expect(verifyWebhook({ secret: 'whsec_another', headers, body, guard: new ReplayGuard() })).toEqual({
      ok: false,
      reason: 'bad-signature',
    });
  });
});

describe('webhook egress', () => {
  it('refuses an address outside the allow list without sending anything', async () => {
    const s = store();
    const t = await target([], '127.0.0.2');
    const hook = register(s, t.url);
    endedRun(s);
    const { worker: w } = worker(s, { allow: parseWebhookAllow('127.0.0.1') });
    await w.runDue();
    expect(t.received).toHaveLength(0);
    const [d] = listDeliveries(s, 'default', hook.id);
    expect(d).toMatchObject({ state: 'failed', attempts: 1, lastStatus: null });
    expect(d!.lastError).toBe(
      `127.0.0.2 port ${t.port} is outside the webhook allow list (127.0.0.1); no request was sent`,
    );
  });

  it('checks the address a name resolves to, not the name (localhost is not 127.0.0.2)', async () => {
    const s = store();
    const t = await target();
    const hook = register(s, `http://localhost:${t.port}/`);
    endedRun(s);
    await worker(s, { allow: parseWebhookAllow('127.0.0.2/32') }).worker.runDue();
    expect(t.received).toHaveLength(0);
    const [d] = listDeliveries(s, 'default', hook.id);
    expect(d!.state).toBe('failed');
    expect(d!.lastError).toMatch(
      /^127\.0\.0\.1 port \d+.* \(resolved from localhost\) is outside the webhook allow list/,
    );
  });

  it('resolves once and connects to that address; a mixed answer is refused', async () => {
    const s = store();
    const t = await target();
    const hook = register(s, `http://hooks.test:${t.port}/`);
    endedRun(s);
    // A fake resolver (DNS rebinding cannot be produced on demand offline): an allowed answer first, then not.
    const answers = [[{ address: '127.0.0.1', family: 4 }], [{ address: '10.9.8.7', family: 4 }]];
    const asked: string[] = [];
    const resolve = async (name: string) => (asked.push(name), answers.shift() ?? []);
    await worker(s, { resolve }).worker.runDue();
    expect(asked).toEqual(['hooks.test']);
    expect(t.received).toHaveLength(1);
    expect(t.received[0]!.headers.host).toBe(`hooks.test:${t.port}`);
    expect(listDeliveries(s, 'default', hook.id)[0]!.state).toBe('delivered');

    const s2 = store();
    const hook2 = register(s2, `http://hooks.test:${t.port}/`);
    endedRun(s2);
    const mixed = async () => [
      { address: '127.0.0.1', family: 4 },
      { address: '169.254.169.254', family: 4 },
    ];
    await worker(s2, { resolve: mixed }).worker.runDue();
    expect(t.received).toHaveLength(1);
    expect(listDeliveries(s2, 'default', hook2.id)[0]!.lastError).toMatch(/^169\.254\.169\.254 port \d+ \(resolved/);
  });

  it('does not follow a redirect to a disallowed address', async () => {
    const s = store();
    const inner = await target([], '127.0.0.2');
    const t = await target([
      { status: 302, location: inner.url },
      { status: 307, location: inner.url },
    ]);
    const hook = register(s, t.url);
    endedRun(s);
    await worker(s, { allow: parseWebhookAllow('127.0.0.1'), maxAttempts: 2 }).worker.runDue();
    expect(inner.received).toHaveLength(0);
    expect(t.received).toHaveLength(2);
    const [d] = listDeliveries(s, 'default', hook.id);
    expect(d).toMatchObject({ state: 'failed', attempts: 2, lastStatus: 307, lastError: 'answered 307' });
  });

  it('reads a bounded part of an endless answer and moves on', async () => {
    const s = store();
    const t = await target(['endless']);
    const hook = register(s, t.url);
    endedRun(s);
    await worker(s, { timeoutMs: 20_000 }).worker.runDue();
    const [d] = listDeliveries(s, 'default', hook.id);
    expect(d).toMatchObject({ state: 'delivered', lastStatus: 200 });
    expect(d!.log[0]!.durationMs).toBeLessThan(20_000);
  });

  it('registration refuses URLs the host would never fetch, naming the field', () => {
    const s = store();
    for (const [url, message] of [
      ['file:///etc/passwd', "url: the URL's scheme must be http or https, not file"],
      ['gopher://127.0.0.1/', "url: the URL's scheme must be http or https, not gopher"],
      ['http://user:pw@127.0.0.1/', 'url: the URL must not carry a user name or password'],
      ['not a url', 'url: not a URL'],
      [`http://127.0.0.1/${'a'.repeat(2100)}`, 'url: the URL is longer than 2048 characters'],
    ])
      expect(() => register(s, url!)).toThrow(message);
    expect(() => register(s, 'http://127.0.0.1/', ['run.ended', 'run.started', ''])).toThrow(
      /^events\[1\]: "run.started" is not one of run.ended, reply, approval\.requested, approval\.decided; events\[2\]/,
    );
    expect(listWebhooks(s, 'default')).toEqual([]);
  });
});

describe('webhook bookkeeping', () => {
  it('queues only for the run tenant, runs that ended after registration, and `reply` only with a reply', async () => {
    const s = store();
    const t = await target();
    const before = endedRun(s);
    // Its end and the registration may share a millisecond (then it counts as after): put it plainly before.
    rawDb(s).prepare("UPDATE runs SET ended_at = '2000-01-01T00:00:00.000Z' WHERE id = ?").run(before);
    const all = register(s, t.url);
    const replies = register(s, t.url, ['reply']);
    const other = register(s, t.url, ['run.ended'], 'other-tenant');
    const silent = endedRun(s, '', 'failed');
    const spoke = endedRun(s, 'hi');
    await worker(s).worker.runDue();
    expect(
      listDeliveries(s, 'default', all.id)
        .map((d) => d.runId)
        .sort(),
    ).toEqual([silent, spoke].sort());
    expect(listDeliveries(s, 'default', replies.id).map((d) => d.runId)).toEqual([spoke]);
    expect(listDeliveries(s, 'other-tenant', other.id)).toEqual([]);
    expect(t.received.map((r) => (JSON.parse(r.body.toString()) as { runId: string }).runId)).not.toContain(before);
    // Another tenant's webhook id is not found, the same as one that does not exist.
    expect(() => listDeliveries(s, 'default', other.id)).toThrow(`no webhook ${other.id}`);
    expect(() => removeWebhook(s, 'default', other.id, 'token:test')).toThrow(`no webhook ${other.id}`);
  });

  it('an interrupted run is delivered as ended with its status; a long reply is cut and says so', async () => {
    const s = store();
    const t = await target();
    register(s, t.url);
    const { sessionId } = s.ensureSession('default', 'b1', 'interrupted');
    s.append(sessionId, [
      { type: 'run.queued', runId: 'run_cut', data: { runner: 'echo', goalRevision: 0, attempt: 1, bindingId: 'b1' } },
      { type: 'run.interrupted', runId: 'run_cut', data: { reason: 'host stopped', killedPid: null } },
    ]);
    const long = endedRun(s, 'é'.repeat(MAX_REPLY_CHARS + 5));
    await worker(s).worker.runDue();
    const bodies = t.received.map((r) => JSON.parse(r.body.toString()) as WebhookBody);
    const cut = bodies.find((b) => b.runId === 'run_cut')!;
    expect([cut.type, cut.outcome, cut.reply]).toEqual([
      'run.ended',
      { status: 'interrupted', reason: 'host stopped' },
      { text: '' },
    ]);
    const longBody = bodies.find((b) => b.runId === long)!;
    expect(longBody.reply).toEqual({ text: 'é'.repeat(MAX_REPLY_CHARS), truncated: true });
  });

  it('queues runs another process ended (the sweep), and one delivery per run whoever queues it', async () => {
    const s = store();
    const t = await target();
    const hook = register(s, t.url);
    const { worker: w } = worker(s);
    w.start();
    const cli = Store.open({ dataDir: s.dataDir }); // e.g. `paddock dispatch` on the same data folder
    cleanup.push(() => cli.close());
    const { worker: cliWorker } = worker(cli);
    cliWorker.start();
    const runId = endedRun(cli);
    await t.arrived(1);
    await Promise.all([w.runDue(), cliWorker.runDue()]);
    expect(t.received).toHaveLength(1);
    expect(listDeliveries(s, 'default', hook.id).map((d) => [d.runId, d.attempts])).toEqual([[runId, 1]]);
  });

  it('a restarted worker resumes pending deliveries, and takes over a claim whose lease ran out', async () => {
    const { store: first, dataDir } = tempStore();
    const t = await target([{ status: 500 }]);
    const hook = register(first, t.url);
    endedRun(first);
    const start = Date.now();
    const one = new WebhookWorker(first, { backoffMs: () => 60_000, now: () => start });
    await one.runDue();
    await one.stop();
    endedRun(first); // ended while no worker ran: the next one's sweep queues it
    first.close();

    const again = Store.open({ dataDir });
    cleanup.push(() => again.close());
    // A worker claims it, then dies before answering.
    expect(sweepEndedRuns(again, start)).toBe(1);
    expect(claimDue(again, 'whw_crashed', start, start + 30_000, 10)).toHaveLength(1);
    const later = (ms: number) => new WebhookWorker(again, { backoffMs: () => 60_000, now: () => start + ms });
    await later(1_000).runDue(); // the failed one is not due, the claimed one still leased
    expect(t.received).toHaveLength(1);
    await later(61_000).runDue();
    expect(t.received).toHaveLength(3);
    expect(
      listDeliveries(again, 'default', hook.id)
        .map((d) => [d.state, d.attempts])
        .sort(),
    ).toEqual([
      ['delivered', 1],
      ['delivered', 2],
    ]);
  });

  it('two workers on one data folder send each delivery once', async () => {
    const s = store();
    const t = await target();
    const hook = register(s, t.url);
    for (let i = 0; i < 24; i += 1) endedRun(s);
    const other = Store.open({ dataDir: s.dataDir });
    cleanup.push(() => other.close());
    const a = worker(s, { batch: 3 }).worker;
    const b = worker(other, { batch: 3 }).worker;
    const [sentA, sentB] = await Promise.all([a.runDue(), b.runDue()]);
    expect(sentA + sentB).toBe(24);
    expect(sentA).toBeGreaterThan(0);
    expect(sentB).toBeGreaterThan(0);
    const ids = t.received.map((r) => r.headers['paddock-webhook-id']);
    expect(ids).toHaveLength(24);
    expect(new Set(ids).size).toBe(24);
    expect(listDeliveries(s, 'default', hook.id).every((d) => d.state === 'delivered' && d.attempts === 1)).toBe(true);
  });

  it('two host processes on one data folder, sending at the same time, send each delivery once', async () => {
    const s = store();
    // The first request is held until a second arrives: both processes must be sending at once.
    const ids: string[] = [];
    let held: ServerResponse | undefined;
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        ids.push(String(req.headers['paddock-webhook-id']));
        if (ids.length === 1) return void (held = res);
        held?.writeHead(204).end();
        held = undefined;
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanup.push(() => new Promise((resolve) => (server.closeAllConnections(), server.close(resolve))));
    const hook = register(s, `http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    for (let i = 0; i < 12; i += 1) endedRun(s);
    const entry = await bundleHostEntry('test/fixtures/deliversWebhooks.ts');
    const [a, b] = await Promise.all([1, 2].map(() => execa('node', [entry, s.dataDir])));
    const sent = [Number(a!.stdout), Number(b!.stdout)];
    expect(sent[0]! + sent[1]!).toBe(12);
    expect(Math.min(...sent)).toBeGreaterThan(0);
    expect(ids).toHaveLength(12);
    expect(new Set(ids).size).toBe(12);
    expect(listDeliveries(s, 'default', hook.id).every((d) => d.state === 'delivered' && d.attempts === 1)).toBe(true);
  });

  it('removal is audited, fails pending deliveries and erases the secret', async () => {
    const s = store();
    const hook = register(s, 'http://127.0.0.1:9/');
    endedRun(s);
    await worker(s, { backoffMs: () => 60_000 }).worker.runDue();
    removeWebhook(s, 'default', hook.id, 'token:admin');
    expect(listWebhooks(s, 'default')).toEqual([]);
    const [d] = listDeliveries(s, 'default', hook.id);
    expect(d).toMatchObject({ state: 'failed', lastError: 'webhook removed' });
    expect(rawDb(s).prepare('SELECT secret FROM webhooks WHERE id = ?').pluck().get(hook.id)).toBe('');
    const audit = rawDb(s)
      .prepare("SELECT type, actor, data FROM audit WHERE type LIKE 'webhook.%' ORDER BY seq")
      .all() as { type: string; actor: string; data: string }[];
    expect(audit.map((a) => [a.type, a.actor])).toEqual([
      ['webhook.registered', 'token:test'],
      ['webhook.removed', 'token:admin'],
    ]);
    expect(JSON.parse(audit[0]!.data)).toEqual({
      webhookId: hook.id,
      tenant: 'default',
      origin: 'http://127.0.0.1:9',
      urlSha256: createHash('sha256').update('http://127.0.0.1:9/').digest('hex'),
      events: ['run.ended'],
    });
    expect(() => removeWebhook(s, 'default', hook.id, 'token:admin')).toThrow(`no webhook ${hook.id}`);
  });

  it("the audit log keeps a URL's origin and digest, never its path or query (where receivers put credentials)", () => {
    const { store: s, dataDir } = tempStore();
    cleanup.push(() => s.close());
    const shapes = [
      'http://127.0.0.1:9/services/T0/B0/PATHCANARY1',
      'http://127.0.0.1:9/hook?token=QUERYCANARY2&x=1',
      'http://127.0.0.1:9/hook#FRAGCANARY3',
      'http://127.0.0.1:9/%51%55ERYCANARY4',
    ];
    for (const url of shapes) removeWebhook(s, 'default', register(s, url).id, 'token:test');
    const audit = rawDb(s).prepare("SELECT data FROM audit WHERE type LIKE 'webhook.%'").pluck().all() as string[];
    expect(audit).toHaveLength(8);
    for (const data of audit) expect(data).not.toMatch(/CANARY|services|token=|%51/);
    const exported = execaSync(process.execPath, [repoPath('bin/paddock.js'), 'audit', 'export'], {
      env: { ...process.env, PADDOCK_HOME: dataDir },
    }).stdout;
    expect(exported).toContain('webhook.registered');
    expect(exported).not.toMatch(/CANARY/);
  });

  it("a removed webhook's secret is gone from every file of the data folder (no old page, no WAL frame)", () => {
    const { store: s, dataDir } = tempStore();
    cleanup.push(() => s.close());
    const hooks = Array.from({ length: 3 }, (_, i) => register(s, `http://127.0.0.1:9/${i}`));
    const kept = register(s, 'http://127.0.0.1:9/kept');
    for (const h of hooks) removeWebhook(s, 'default', h.id, 'token:test');
    const files = () =>
      readdirSync(dataDir, { recursive: true, withFileTypes: true })
        .filter((e) => e.isFile())
        .map((e) => join(e.parentPath, e.name));
    const holding = (secret: string) => files().filter((f) => readFileSync(f).includes(Buffer.from(secret)));
    for (const h of hooks) expect(holding(h.secret), h.id).toEqual([]);
    // The probe finds what is there: the active webhook's secret is on disk.
    expect(holding(kept.secret).length).toBeGreaterThan(0);
  });

  it('canary: the secret is in no audit row, event, log line, listing or request but its signature', async () => {
    const s = store();
    const t = await target([{ status: 500 }]);
    const hook = register(s, t.url);
    expect(hook.secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    endedRun(s, 'reply');
    const { worker: w, lines } = worker(s);
    await w.runDue();
    expect(lines.length).toBe(2);
    const db = rawDb(s);
    const haystacks: [string, string][] = [
      ['audit', JSON.stringify(db.prepare('SELECT * FROM audit').all())],
      ['events', JSON.stringify(db.prepare('SELECT * FROM events').all())],
      ['deliveries', JSON.stringify(db.prepare('SELECT * FROM webhook_deliveries').all())],
      ['attempts', JSON.stringify(db.prepare('SELECT * FROM webhook_attempts').all())],
      ['log', lines.join('')],
      ['list', JSON.stringify(listWebhooks(s, 'default'))],
      ['deliveries listing', JSON.stringify(listDeliveries(s, 'default', hook.id))],
      ['requests', JSON.stringify(t.received.map((r) => [r.headers, r.body.toString()]))],
    ];
    const forms = [hook.secret, hook.secret.slice(6), Buffer.from(hook.secret).toString('base64')];
    for (const [where, text] of haystacks) for (const form of forms) expect(text.includes(form), where).toBe(false);
    expect(deliveryById(s, listDeliveries(s, 'default', hook.id)[0]!.id)!.body).toContain('"reply"');
  });
});
