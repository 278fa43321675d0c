// The admin-ops endpoints of `paddock serve` end to end: the real command as a child process on a private data
// folder, real tokens made with `paddock tokens create`, real runs. Tenants `default` (A) and `other` (B): B's runs,
// sessions, audit records and secret names never reach A's admin (a canary planted in B's events and configuration
// is grepped for in every answer A gets); resolve of a run a dead host left with an unknown effect; the audit chain
// verified, then tampered with and caught.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashRecord } from '../../host/audit/auditLog.js';
import { Store } from '../../host/state/store.js';
import { paddock } from '../helpers/cli.js';
import { chatEvent, FIXTURE_RUNNERS } from '../helpers/host.js';
import { startServe, type ServeChild } from '../helpers/serve.js';

const env = { PADDOCK_RUNNER_DIRS: FIXTURE_RUNNERS };
const CANARY = 'CANARY_B_5e1d07';

const home = mkdtempSync(join(tmpdir(), 'paddock-serve-adminops-'));
let server: ServeChild;
const tokens = { adminA: '', platformA: '', approverA: '', adminB: '', platformB: '' };
/** Runs a dead host left behind with an open effect, planted before the server starts (its recovery pauses them). */
const leftBehind = { a: 'run_left-behind-a', b: 'run_left-behind-b' };

/** A JSON object as the tests read it: the members they use, typed; the rest checked by the assertions. */
interface Json {
  [member: string]: unknown;
  id: string;
  lastActivityAt: string;
  runId: string;
  sessionId: string;
  bindingId: string;
  seq: number;
  type: string;
  tenant: string | null;
  runs: Json[];
  sessions: Json[];
  records: Json[];
  next: unknown;
  code: string;
  title: string;
}
async function call(
  method: string,
  path: string,
  token: string,
  body?: unknown,
): Promise<{ status: number; body: Json; text: string; headers: Headers }> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  const json = /json/.test(res.headers.get('content-type') ?? '') && !/ndjson/.test(res.headers.get('content-type')!);
  return { status: res.status, body: (json && text ? JSON.parse(text) : {}) as Json, text, headers: res.headers };
}

async function token(tenant: string, role: string): Promise<string> {
  const r = await paddock(['tokens', 'create', '--tenant', tenant, '--role', role], { dataDir: home });
  expect(r.exitCode, r.stderr).toBe(0);
  return r.stdout.trim();
}

/** Dispatch a chat event with a platform token; the 202's ids. */
async function dispatch(tok: string, bot: string, conversation: string, text = 'hi'): Promise<Json> {
  const r = await call('POST', '/v1/events', tok, chatEvent({ bot, text, conversation: { id: conversation } }));
  expect(r.status, r.text).toBe(202);
  return r.body;
}

/** Plant a run of (tenant, binding) queued by no live host with an effect intent and no result (cliState's way). */
function plantLeftBehind(tenant: string, bindingId: string, runId: string): void {
  const store = Store.open({ dataDir: home });
  try {
    const { sessionId } = store.ensureSession(tenant, bindingId, `telegram:${bindingId}:private:left-${tenant}`);
    store.append(sessionId, [
      { type: 'run.queued', runId, data: { runner: 'echo', goalRevision: 0, attempt: 1, bindingId } },
      {
        type: 'effect.intent',
        runId,
        data: { effectId: `eff_${tenant}`, kind: 'git.push', target: 'origin', probe: {} },
      },
    ]);
  } finally {
    store.close();
  }
}

beforeAll(async () => {
  const yaml = [
    'resources:',
    '  models:',
    `    - { id: b-model, tenant: other, provider: anthropic, model: m, apiKey: { env: ${CANARY}_KEY } }`,
    '    - { id: a-model, provider: anthropic, model: m, apiKey: { env: PADDOCK_ADMIN_OPS_UNSET_A } }',
    'bindings:',
    '  - { id: echo-a, runner: echo, sandbox: process, route: { platform: telegram, bot: echo-a } }',
    '  - { id: echo-a2, runner: echo, sandbox: process, route: { platform: telegram, bot: echo-a2 } }',
    '  - { id: echo-b, tenant: other, runner: echo, sandbox: process, route: { platform: telegram, bot: echo-b } }',
  ].join('\n');
  writeFileSync(join(home, 'paddock.yaml'), `${yaml}\n`);
  const applied = await paddock(['apply', '-f', join(home, 'paddock.yaml')], { dataDir: home, env });
  expect(applied.exitCode, applied.stderr).toBe(0);
  tokens.adminA = await token('default', 'admin');
  tokens.platformA = await token('default', 'platform');
  tokens.approverA = await token('default', 'approver');
  tokens.adminB = await token('other', 'admin');
  tokens.platformB = await token('other', 'platform');
  plantLeftBehind('default', 'echo-a', leftBehind.a);
  plantLeftBehind('other', 'echo-b', leftBehind.b);
  server = await startServe(home, ['--rate', '1000', '--burst', '1000'], env);
}, 120_000);
/** Until neither tenant has a queued or running run (a bounded poll of GET /v1/runs, so the server stops idle). */
async function settled(): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (const admin of [tokens.adminA, tokens.adminB]) {
    for (;;) {
      const r = await call('GET', '/v1/runs?status=queued,running', admin);
      expect(r.status).toBe(200);
      if (r.body.runs.length === 0) break;
      if (Date.now() > deadline) throw new Error(`runs still open after 120 s: ${r.text}`);
      await new Promise((resolve) => setTimeout(resolve, 100)); // the poll interval, not a wait for an outcome
    }
  }
}

afterAll(async () => {
  await settled();
  const code = await server.stop();
  expect(code, server.stderr().slice(-4000)).toBe(0);
}, 180_000);

/** Every run id of a listing, all pages, `limit` at a time; `between` runs after each page. */
async function allRuns(query: string, limit: number, between: () => Promise<unknown> = async () => undefined) {
  const ids: string[] = [];
  const texts: string[] = [];
  let before: string | null = null;
  for (;;) {
    const r = await call('GET', `/v1/runs?${query}&limit=${limit}${before ? `&before=${before}` : ''}`, tokens.adminA);
    expect(r.status, r.text).toBe(200);
    ids.push(...(r.body.runs as { id: string }[]).map((x) => x.id));
    texts.push(r.text);
    before = r.body.next as string | null;
    if (!before) return { ids, texts };
    await between();
  }
}

describe('paddock serve without --api-host-config', () => {
  it("holds the operator's admin token like any API admin: no resource, no binding outside the sandbox", async () => {
    const r = await call('POST', '/v1/config/apply', tokens.adminA, {
      dryRun: true,
      config: {
        resources: { mcpServers: [{ id: 'ops-tools', command: '/bin/true' }] },
        bindings: [{ id: 'ops-bot', runner: 'echo', sandbox: 'process', route: { platform: 'ops-host' } }],
      },
    });
    expect(r.status, r.text).toBe(400);
    expect((r.body.errors as { path: string }[]).map((e) => e.path).sort()).toEqual([
      'config.bindings[0].sandbox',
      'config.resources.mcpServers[0]',
    ]);
  });
});

describe('paddock serve: admin runs and sessions', () => {
  it("lists A's runs and sessions only, newest first, in pages that stay stable while runs are added", async () => {
    const a = [];
    for (let i = 0; i < 5; i++) a.push(await dispatch(tokens.platformA, i % 2 ? 'echo-a2' : 'echo-a', `conv-a${i}`));
    const b = [
      await dispatch(tokens.platformB, 'echo-b', `conv-${CANARY}`, `text ${CANARY}`),
      await dispatch(tokens.platformB, 'echo-b', 'conv-b2'),
    ];
    const snapshot = await call('GET', '/v1/runs?limit=200', tokens.adminA);
    const expected = (snapshot.body.runs as { id: string }[]).map((r) => r.id);
    expect(expected).toEqual(expect.arrayContaining([...a.map((x) => x.runId), leftBehind.a]));
    expect(expected).toHaveLength(6);
    // Pages of 2 while A dispatches a run between pages: every run of the snapshot once, in order, none added.
    const paged = await allRuns('', 2, () => dispatch(tokens.platformA, 'echo-a', 'conv-during'));
    expect(paged.ids).toEqual(expected);
    const all = [snapshot.text, ...paged.texts];
    for (const text of all) {
      expect(text).not.toContain(CANARY);
      for (const x of [...b, { runId: leftBehind.b }]) expect(text).not.toContain(x.runId);
    }
    expect((await call('GET', '/v1/runs?limit=200', tokens.adminA)).body.runs).toHaveLength(6 + 3);
    // B's admin sees B's runs only.
    const theirs = await call('GET', '/v1/runs?limit=200', tokens.adminB);
    expect((theirs.body.runs as { id: string }[]).map((r) => r.id).sort()).toEqual(
      [...b.map((x) => x.runId), leftBehind.b].sort(),
    );

    const sessions = await call('GET', '/v1/sessions?limit=200', tokens.adminA);
    expect(sessions.status).toBe(200);
    expect(sessions.text).not.toContain(CANARY);
    const sessionIds = (sessions.body.sessions as { id: string }[]).map((s) => s.id);
    for (const x of b) expect(sessionIds).not.toContain(x.sessionId);
    for (const x of a) expect(sessionIds).toContain(x.sessionId);
    const times = (sessions.body.sessions as { lastActivityAt: string }[]).map((s) => s.lastActivityAt);
    expect(times).toEqual([...times].sort().reverse());
    const p1 = await call('GET', '/v1/sessions?limit=3', tokens.adminA);
    const p2 = await call('GET', `/v1/sessions?limit=3&before=${p1.body.next}`, tokens.adminA);
    expect(p2.status).toBe(200);
    for (const s of p2.body.sessions as { id: string }[])
      expect((p1.body.sessions as { id: string }[]).map((x) => x.id)).not.toContain(s.id);
  });

  it('filters by status, binding and session', async () => {
    const interrupted = await call('GET', '/v1/runs?status=interrupted', tokens.adminA);
    expect((interrupted.body.runs as { id: string }[]).map((r) => r.id)).toEqual([leftBehind.a]);
    const byBinding = await call('GET', '/v1/runs?binding=echo-a2&limit=200', tokens.adminA);
    expect(byBinding.body.runs.length).toBeGreaterThanOrEqual(2);
    expect((byBinding.body.runs as { bindingId: string }[]).every((r) => r.bindingId === 'echo-a2')).toBe(true);
    const one = byBinding.body.runs[0] as { sessionId: string };
    const bySession = await call('GET', `/v1/runs?session=${one.sessionId}`, tokens.adminA);
    expect((bySession.body.runs as { sessionId: string }[]).every((r) => r.sessionId === one.sessionId)).toBe(true);
    // B's binding name as A's filter: nothing.
    expect((await call('GET', '/v1/runs?binding=echo-b', tokens.adminA)).body).toEqual({ runs: [], next: null });
    const paused = await call('GET', '/v1/sessions?binding=echo-a&limit=200', tokens.adminA);
    expect(paused.body.sessions).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ paused: expect.objectContaining({ reason: expect.any(String) }) }),
      ]),
    );
  });

  it('resolves the interrupted run (audited as the token; the session resumes), then 409; B gets 404', async () => {
    const asB = await call('POST', `/v1/runs/${leftBehind.a}/resolve`, tokens.adminB, { as: 'failed' });
    const missing = await call('POST', '/v1/runs/run_left-behind-x/resolve', tokens.adminB, { as: 'failed' });
    expect([asB.status, missing.status]).toEqual([404, 404]);
    expect(asB.body.title).toBe(missing.body.title);
    expect(asB.body.code).toBe(missing.body.code);
    const asPlatform = await call('POST', `/v1/runs/${leftBehind.a}/resolve`, tokens.platformA, { as: 'failed' });
    expect(asPlatform.status).toBe(403);
    expect(asPlatform.body).toMatchObject({ code: 'forbidden', requiredRole: ['admin'], role: 'platform' });

    const r = await call('POST', `/v1/runs/${leftBehind.a}/resolve`, tokens.adminA, { as: 'succeeded', by: 'ada' });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toEqual({ runId: leftBehind.a, as: 'succeeded', resolved: ['eff_default'], resumed: true });
    const again = await call('POST', `/v1/runs/${leftBehind.a}/resolve`, tokens.adminA, { as: 'failed' });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: 'conflict', runStatus: 'interrupted' });
    // Its audit record, in A's export: the token is the actor.
    const exported = await call('GET', '/v1/audit/export?limit=1000', tokens.adminA);
    const resolved = (exported.body.records as Json[]).filter((x) => x.type === 'effect.resolved');
    expect(resolved).toEqual([
      expect.objectContaining({
        runId: leftBehind.a,
        actor: `api:${tokens.adminA.split('_')[1]}/user:ada`,
        data: { effectId: 'eff_default', status: 'succeeded', by: 'ada' },
        tenant: 'default',
      }),
    ]);
    // B's run is still paused, untouched.
    const bSessions = await call('GET', '/v1/sessions?binding=echo-b&limit=200', tokens.adminB);
    expect((bSessions.body.sessions as Json[]).some((s) => s.paused !== null)).toBe(true);
  });
});

describe('paddock serve: admin audit and doctor', () => {
  it("exports each tenant's own records (host records to default only), verifiable record by record", async () => {
    const pages = async (tok: string, format: 'json' | 'jsonl') => {
      const out: Json[] = [];
      const texts: string[] = [];
      let after = 0;
      for (;;) {
        const r = await call('GET', `/v1/audit/export?limit=7&after=${after}&format=${format}`, tok);
        expect(r.status, r.text).toBe(200);
        texts.push(r.text);
        if (format === 'json') {
          out.push(...(r.body.records as Json[]));
          after = r.body.next as number;
          if (!r.body.more) break;
        } else {
          out.push(
            ...r.text
              .split('\n')
              .filter(Boolean)
              .map((l) => JSON.parse(l) as Json),
          );
          after = Number(r.headers.get('paddock-audit-next'));
          if (r.headers.get('paddock-audit-more') === 'false') break;
        }
      }
      return { records: out, texts };
    };
    const a = await pages(tokens.adminA, 'json');
    const aLines = await pages(tokens.adminA, 'jsonl');
    // The same chain in both formats. The chain only grows, and the host may append meanwhile (a run of the cases
    // above still removing its workspace): the later export begins with the earlier one (once compared whole, it
    // failed with 28 records, then 31).
    expect(aLines.records.slice(0, a.records.length)).toEqual(a.records);
    expect(aLines.records.every((r) => r.tenant === 'default' || r.tenant === null)).toBe(true);
    for (const text of [...a.texts, ...aLines.texts]) expect(text).not.toContain(CANARY);
    const types = [...new Set(a.records.map((r) => r.type))];
    expect(types).toEqual(
      expect.arrayContaining([
        'audit.key_created',
        'config.created',
        'token.created',
        'session.created',
        'recovery.run_interrupted',
        'recovery.session_paused',
        'effect.resolved',
      ]),
    );
    // Each record's hash is its content's; consecutive seqs link.
    for (const [i, r] of a.records.entries()) {
      const { hash, tenant: _tenant, ...hashed } = r;
      expect(hashRecord(hashed as never)).toBe(hash);
      const prior = a.records[i - 1];
      if (prior && prior.seq === r.seq - 1) expect(r.prev).toBe(prior.hash);
    }
    // B's export holds the canary (the positive control) and none of A's or the host's records.
    const b = await pages(tokens.adminB, 'json');
    expect(b.texts.join('')).toContain(CANARY);
    expect(b.records.every((r) => r.tenant === 'other')).toBe(true);
    expect(b.records.map((r) => r.type)).toEqual(expect.arrayContaining(['config.created', 'session.created']));
    expect(b.records.map((r) => r.type)).not.toContain('audit.key_created');
    const seqsA = new Set(a.records.map((r) => r.seq));
    expect(b.records.filter((r) => seqsA.has(r.seq))).toEqual([]);
  });

  it("doctor answers the machine's report with the token's tenant's missing secret names only", async () => {
    const a = await call('GET', '/v1/doctor', tokens.adminA);
    expect(a.status).toBe(200);
    expect(a.text).not.toContain(CANARY);
    expect(a.body.missingSecrets).toEqual([expect.stringContaining('PADDOCK_ADMIN_OPS_UNSET_A')]);
    expect(Object.keys(a.body.backends as object)).toContain('process');
    const b = await call('GET', '/v1/doctor', tokens.adminB);
    expect(b.body.missingSecrets).toEqual([expect.stringContaining(`${CANARY}_KEY`)]);
    expect((await call('GET', '/v1/doctor', tokens.approverA)).status).toBe(403);
  });

  it('verifies the chain, then catches a record edited behind its back (shown only to its tenant)', async () => {
    const ok = await call('GET', '/v1/audit/verify', tokens.adminB);
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ ok: true, keyId: expect.any(String) });
    expect(ok.body.records).toBeGreaterThan(10);
    const db = new Database(join(home, 'paddock.db'));
    db.pragma('busy_timeout = 5000');
    const seq = db
      .prepare("SELECT seq FROM audit WHERE type = 'session.created' AND data LIKE ?")
      .pluck()
      .get(`%${CANARY}%`) as number;
    db.exec(
      `DROP TRIGGER audit_no_update; UPDATE audit SET data = replace(data, 'conv-', 'edited-') WHERE seq = ${seq}`,
    );
    db.close();
    const b = await call('GET', '/v1/audit/verify', tokens.adminB);
    expect(b.body).toMatchObject({ ok: false, problem: 'edited', seq, record: { seq, tenant: 'other' } });
    const a = await call('GET', '/v1/audit/verify', tokens.adminA);
    expect(a.body).toMatchObject({ ok: false, problem: 'edited', seq, record: null });
    expect(a.text).not.toContain(CANARY);
    expect((await call('GET', '/v1/audit/verify', tokens.platformA)).status).toBe(403);
  });
});
