// The console's API gaps (issue 15, docs/console.md §3–§4) on a real `paddock serve` child over a real data folder:
// the viewer role (every read of its tenant answers, every write is 403 and changes nothing), GET /v1/whoami,
// GET /v1/overview (tenant-scoped counts, the last recorded audit verification from the API and the CLI), and the
// token routes (admin of its own tenant: another tenant's token id is 404, malformed bodies name every field, a
// revoked token is 401, a canary in tenant beta's token name never reaches acme).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertApproval, type NewApproval } from '../../host/state/approvals.js';
import { insertCapabilityGrant } from '../../host/state/capabilityGrants.js';
import { Store } from '../../host/state/store.js';
import { paddock } from '../helpers/cli.js';
import { chatEvent, FIXTURE_RUNNERS } from '../helpers/host.js';
import { startServe, type ServeChild } from '../helpers/serve.js';

const env = { PADDOCK_RUNNER_DIRS: FIXTURE_RUNNERS };
const CANARY = 'CANARY_BETA_7c41e2';
const home = mkdtempSync(join(tmpdir(), 'paddock-serve-console-'));
let server: ServeChild;
const tok: Record<
  'adminA' | 'viewerA' | 'approverA' | 'platformA' | 'adminB' | 'viewerB' | 'viewerD' | 'adminD',
  string
> = { adminA: '', viewerA: '', approverA: '', platformA: '', adminB: '', viewerB: '', viewerD: '', adminD: '' };
const ids = { runA: '', sessionA: '', runB: '', sessionB: '', approvalA: '', grantA: '', tokenB: '' };

type Json = Record<string, unknown>;
async function call(method: string, path: string, token: string, body?: unknown) {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  const json = /json/.test(res.headers.get('content-type') ?? '');
  return { status: res.status, body: (json && text ? JSON.parse(text) : {}) as Json, text };
}
const idOf = (token: string) => token.slice(4, 16);
/** A token's secret part (`pdk_<12 hex>_` first; the secret itself may hold `_`). */
const secretOf = (token: string) => token.slice(17);

async function cliToken(tenant: string, role: string, name = ''): Promise<string> {
  const named = name ? ['--name', name] : [];
  const r = await paddock(['tokens', 'create', '--tenant', tenant, '--role', role, ...named], { dataDir: home });
  expect(r.exitCode, r.stderr).toBe(0);
  return r.stdout.trim();
}

/** What a write must not change: the audit head, approvals, grants, bindings, tokens, runs, webhooks. */
function snapshot(): Json {
  const db = new Database(join(home, 'paddock.db'), { readonly: true });
  try {
    const q = (sql: string) => db.prepare(sql).all();
    return {
      audit: q('SELECT max(seq) AS seq FROM audit'),
      approvals: q('SELECT id, status FROM approvals ORDER BY id'),
      grants: q('SELECT id, revoked_at FROM capability_grants ORDER BY id'),
      config: q('SELECT kind, id, version FROM config_objects ORDER BY kind, id'),
      tokens: q('SELECT id, revoked_at FROM api_tokens ORDER BY id'),
      runs: q('SELECT id, status FROM runs ORDER BY id'),
      webhooks: q('SELECT id FROM webhooks'),
      controls: q('SELECT count(*) AS n FROM run_controls'),
    };
  } finally {
    db.close();
  }
}

beforeAll(async () => {
  const yaml = [
    'bindings:',
    '  - { id: echo-a, tenant: acme, runner: echo, sandbox: process, route: { platform: telegram, bot: echo-a } }',
    '  - { id: echo-b, tenant: beta, runner: echo, sandbox: process, route: { platform: telegram, bot: echo-b } }',
  ].join('\n');
  writeFileSync(join(home, 'paddock.yaml'), `${yaml}\n`);
  const applied = await paddock(['apply', '-f', join(home, 'paddock.yaml')], { dataDir: home, env });
  expect(applied.exitCode, applied.stderr).toBe(0);
  tok.adminA = await cliToken('acme', 'admin', 'acme-admin');
  tok.viewerA = await cliToken('acme', 'viewer', 'acme-viewer');
  tok.approverA = await cliToken('acme', 'approver');
  tok.platformA = await cliToken('acme', 'platform');
  tok.adminB = await cliToken('beta', 'admin');
  tok.viewerB = await cliToken('beta', 'viewer', `beta ${CANARY}`);
  tok.viewerD = await cliToken('default', 'viewer');
  tok.adminD = await cliToken('default', 'admin');
  ids.tokenB = idOf(tok.viewerB);
  server = await startServe(home, ['--rate', '1000', '--burst', '1000'], env);
  for (const [platform, bot, key] of [
    [tok.platformA, 'echo-a', 'A'],
    [tok.adminB, 'echo-b', 'B'],
  ] as const) {
    const r = await call(
      'POST',
      '/v1/events',
      platform,
      chatEvent({ bot, text: key === 'B' ? `hi ${CANARY}` : 'hi acme', conversation: { id: bot } }),
    );
    expect(r.status, r.text).toBe(202);
    ids[`run${key}`] = r.body.runId as string;
    ids[`session${key}`] = r.body.sessionId as string;
    // The run stream ends with the run: it has ended when this returns.
    expect((await call('GET', `/v1/runs/${ids[`run${key}`]}/events`, platform)).text).toContain('run.ended');
  }
  const store = Store.open({ dataDir: home });
  try {
    const at = new Date();
    const approval = {
      runId: ids.runA,
      via: 'runner',
      effect: 'fs.write',
      target: { kind: 'path', value: 'a.txt' },
      summary: 'write a.txt',
      dataClass: null,
      destination: null,
      risk: { score: 10, level: 'low', reasons: [] as string[] },
      goalRevision: 0,
      groupId: null,
      requestedLifetime: 'session',
      createdAt: at.toISOString(),
      expiresAt: new Date(at.getTime() + 3_600_000).toISOString(),
    } satisfies Partial<NewApproval>;
    ids.approvalA = insertApproval(store, {
      ...approval,
      tenant: 'acme',
      sessionId: ids.sessionA,
      bindingId: 'echo-a',
    }).id;
    insertApproval(store, {
      ...approval,
      runId: ids.runB,
      tenant: 'beta',
      sessionId: ids.sessionB,
      bindingId: 'echo-b',
    });
    ids.grantA = insertCapabilityGrant(store, {
      capability: 'network',
      scope: { kind: 'domain', value: 'x.example' },
      grantor: 'user:op',
      lifetime: 'binding',
      tenant: 'acme',
      bindingId: 'echo-a',
    }).id;
  } finally {
    store.close();
  }
}, 120_000);

afterAll(async () => {
  if (!server) return; // the set-up failed: its own error says why
  const code = await server.stop();
  expect(code, server.stderr().slice(-4000)).toBe(0);
}, 60_000);

describe('GET /v1/whoami', () => {
  it('names the calling token of every role, never its secret; a revoked token is 401', async () => {
    for (const [key, tenant, role] of [
      ['adminA', 'acme', 'admin'],
      ['viewerA', 'acme', 'viewer'],
      ['platformA', 'acme', 'platform'],
      ['approverA', 'acme', 'approver'],
      ['viewerB', 'beta', 'viewer'],
    ] as const) {
      const r = await call('GET', '/v1/whoami', tok[key]);
      expect(r.status, r.text).toBe(200);
      expect(r.body).toEqual({
        tokenId: idOf(tok[key]),
        tenant,
        role,
        name: expect.any(String) as string,
        expiresAt: null,
      });
      expect(r.text).not.toContain(secretOf(tok[key]));
    }
    expect((await call('GET', '/v1/whoami', tok.viewerA)).body.name).toBe('acme-viewer');
    expect((await call('GET', '/v1/whoami', 'pdk_000000000000_' + 'x'.repeat(43))).status).toBe(401);
  });
});

describe('the viewer role', () => {
  it("reads what its tenant's admin reads: 200 with acme's data only", async () => {
    const reads = [
      '/v1/runs',
      `/v1/runs/${ids.runA}`,
      `/v1/runs/${ids.runA}/events`,
      '/v1/sessions',
      `/v1/sessions/${ids.sessionA}`,
      '/v1/approvals',
      `/v1/approvals/${ids.approvalA}`,
      '/v1/grants',
      '/v1/bindings',
      '/v1/bindings/echo-a',
      '/v1/bindings/echo-a/explain',
      '/v1/runners',
      '/v1/resources',
      '/v1/config',
      '/v1/models',
      '/v1/doctor',
      '/v1/audit/export?limit=1000',
      '/v1/overview',
      '/v1/whoami',
    ];
    for (const path of reads) {
      const r = await call('GET', path, tok.viewerA);
      expect(r.status, `${path}: ${r.text}`).toBe(200);
      for (const theirs of [CANARY, ids.runB, ids.sessionB, 'echo-b', ids.tokenB])
        expect(r.text, path).not.toContain(theirs);
    }
    expect(((await call('GET', '/v1/runs', tok.viewerA)).body.runs as Json[]).map((r) => r.id)).toEqual([ids.runA]);
    expect(((await call('GET', '/v1/approvals', tok.viewerA)).body.approvals as Json[]).map((a) => a.id)).toEqual([
      ids.approvalA,
    ]);
    // The session stream stays open: it answers 200 as an event stream, then the client leaves.
    const abort = new AbortController();
    const stream = await fetch(`${server.url}/v1/sessions/${ids.sessionA}/events`, {
      headers: { authorization: `Bearer ${tok.viewerA}` },
      signal: abort.signal,
    });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    abort.abort();
    // Beta's objects are not found, exactly like ids that do not exist.
    for (const path of [`/v1/runs/${ids.runB}`, `/v1/sessions/${ids.sessionB}`, '/v1/bindings/echo-b'])
      expect((await call('GET', path, tok.viewerA)).status, path).toBe(404);
  });

  it("reads its tenant's audit records only, in the operator tenant too (the host's own are the admin's)", async () => {
    const records = async (token: string) =>
      (await call('GET', '/v1/audit/export?limit=1000', token)).body.records as { tenant: string | null }[];
    const viewer = await records(tok.viewerD);
    expect(viewer.length).toBeGreaterThan(0); // its own token's creation at least
    expect(viewer.every((r) => r.tenant === 'default')).toBe(true);
    expect((await records(tok.adminD)).some((r) => r.tenant === null)).toBe(true);
    expect((await records(tok.viewerA)).every((r) => r.tenant === 'acme')).toBe(true);
  });

  it('is refused every write (403 naming the role needed and its own) and nothing changes', async () => {
    const before = snapshot();
    const writes: [string, string, unknown][] = [
      ['POST', '/v1/events', chatEvent({ bot: 'echo-a', text: 'x', conversation: { id: 'v' } })],
      ['POST', `/v1/runs/${ids.runA}/cancel`, {}],
      ['POST', `/v1/sessions/${ids.sessionA}/messages`, { id: 'm-1', text: 'x' }],
      ['POST', `/v1/runs/${ids.runA}/resolve`, { as: 'failed' }],
      ['POST', `/v1/approvals/${ids.approvalA}/approve`, {}],
      ['POST', `/v1/approvals/${ids.approvalA}/deny`, {}],
      ['POST', `/v1/grants/${ids.grantA}/revoke`, {}],
      ['POST', '/v1/bindings/echo-a/disable', { cancelActive: true }],
      ['POST', '/v1/bindings/echo-a/enable', {}],
      ['POST', '/v1/config/apply', { config: { bindings: [] }, prune: true }],
      ['GET', '/v1/tokens', undefined],
      ['POST', '/v1/tokens', { role: 'admin' }],
      ['POST', `/v1/tokens/${idOf(tok.viewerA)}/revoke`, undefined],
      ['POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/hook' }],
      ['GET', '/v1/webhooks', undefined],
      ['DELETE', '/v1/webhooks/wh_x', undefined],
    ];
    for (const [method, path, body] of writes) {
      const r = await call(method, path, tok.viewerA, body);
      expect(r.status, `${method} ${path}: ${r.text}`).toBe(403);
      expect(r.body.code, path).toBe('forbidden');
      expect(r.body.role, path).toBe('viewer');
      expect(r.body.requiredRole, path).not.toContain('viewer');
    }
    // The operator-wide metrics and the OpenAI-compatible completions (in OpenAI's error shape).
    expect((await call('GET', '/metrics', tok.viewerA)).status).toBe(403);
    const chat = await call('POST', '/v1/chat/completions', tok.viewerA, {
      model: 'echo-a',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(chat.status).toBe(403);
    expect(chat.body.error).toMatchObject({ code: 'forbidden', message: expect.stringMatching(/viewer.*platform/) });
    expect(snapshot()).toEqual(before);
  });

  it('is refused before its body is read: a malformed write is 403, not 400', async () => {
    const r = await call('POST', '/v1/config/apply', tok.viewerA, { nonsense: true });
    expect(r.status).toBe(403);
    expect((await call('POST', `/v1/approvals/${ids.approvalA}/approve`, tok.viewerA, { lifetime: 9 })).status).toBe(
      403,
    );
  });
});

describe('GET /v1/overview and the recorded audit verifications', () => {
  it("counts the tenant's runs, queue and pending approvals; the last verify from the API, then the CLI", async () => {
    const first = await call('GET', '/v1/overview', tok.viewerA);
    expect(first.status, first.text).toBe(200);
    expect(first.body).toMatchObject({
      tenant: 'acme',
      runs: { last24h: { total: 1 }, running: 0, queued: 0 },
      approvals: { pending: 1 },
      auditVerification: null,
    });
    const window = (first.body.runs as { last24h: { since: string } }).last24h;
    expect(Date.parse(first.body.at as string) - Date.parse(window.since)).toBe(24 * 3_600_000);
    expect(first.text).not.toContain(CANARY);
    expect((await call('GET', '/v1/overview', tok.approverA)).status).toBe(200);
    expect((await call('GET', '/v1/overview', tok.adminB)).body).toMatchObject({
      tenant: 'beta',
      approvals: { pending: 1 },
    });
    const platform = await call('GET', '/v1/overview', tok.platformA);
    expect(platform.status).toBe(403);
    expect(platform.body).toMatchObject({ requiredRole: ['viewer', 'approver', 'admin'], role: 'platform' });

    const verified = await call('GET', '/v1/audit/verify', tok.viewerA);
    expect(verified.body).toMatchObject({ ok: true });
    const after = await call('GET', '/v1/overview', tok.viewerB);
    expect(after.body.auditVerification).toMatchObject({
      ok: true,
      records: verified.body.records,
      firstBad: null,
      via: 'api',
    });
    const cli = await paddock(['audit', 'verify', '--json'], { dataDir: home });
    expect(cli.exitCode, cli.stderr).toBe(0);
    const last = (await call('GET', '/v1/overview', tok.adminA)).body.auditVerification as Json;
    expect(last).toMatchObject({ ok: true, via: 'cli' });
    expect(Date.parse(last.at as string)).toBeGreaterThanOrEqual(Date.parse(after.body.at as string));
  });
});

describe('tokens over the API', () => {
  it("lists the tenant's tokens only, without secrets or hashes; not for a viewer or an approver", async () => {
    const r = await call('GET', '/v1/tokens', tok.adminA);
    expect(r.status, r.text).toBe(200);
    const listed = r.body.tokens as Json[];
    expect(listed.map((t) => t.id).sort()).toEqual(
      [tok.adminA, tok.viewerA, tok.approverA, tok.platformA].map(idOf).sort(),
    );
    expect(Object.keys(listed[0]!).sort()).toEqual([
      'createdAt',
      'createdBy',
      'expiresAt',
      'id',
      'lastUsedAt',
      'name',
      'revokedAt',
      'revokedBy',
      'role',
      'tenant',
    ]);
    for (const t of Object.values(tok)) expect(r.text).not.toContain(secretOf(t));
    expect(r.text).not.toContain(CANARY);
    expect(((await call('GET', '/v1/tokens', tok.adminB)).body.tokens as Json[]).map((t) => t.name)).toContain(
      `beta ${CANARY}`,
    );
    expect((await call('GET', '/v1/tokens', tok.approverA)).status).toBe(403);
  });

  it('creates a token shown once (audited with the caller), then revokes it: the next request is 401', async () => {
    const created = await call('POST', '/v1/tokens', tok.adminA, { role: 'viewer', name: 'console', expiresIn: '2d' });
    expect(created.status, created.text).toBe(201);
    const token = created.body.token as string;
    expect(token).toMatch(/^pdk_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/);
    expect(created.body).toMatchObject({ id: idOf(token), tenant: 'acme', role: 'viewer', name: 'console' });
    expect(created.body.createdBy).toBe(`token:${idOf(tok.adminA)}`);
    const expires = Date.parse(created.body.expiresAt as string) - Date.now();
    expect(expires).toBeGreaterThan(47 * 3_600_000);
    expect(expires).toBeLessThanOrEqual(48 * 3_600_000);
    expect((await call('GET', '/v1/whoami', token)).body).toMatchObject({ role: 'viewer', name: 'console' });
    const listed = (await call('GET', '/v1/tokens', tok.adminA)).text;
    expect(listed).toContain(idOf(token));
    expect(listed).not.toContain(secretOf(token));

    const revoked = await call('POST', `/v1/tokens/${idOf(token)}/revoke`, tok.adminA);
    expect(revoked.status, revoked.text).toBe(200);
    expect(revoked.body).toMatchObject({ id: idOf(token), revokedBy: `token:${idOf(tok.adminA)}` });
    expect(revoked.body.token).toBeUndefined();
    const refused = await call('GET', '/v1/whoami', token);
    expect(refused.status).toBe(401);
    expect(refused.body.reason).toBe('revoked');
    // Again: the same answer, not audited twice.
    const again = await call('POST', `/v1/tokens/${idOf(token)}/revoke`, tok.adminA);
    expect(again.body.revokedAt).toBe(revoked.body.revokedAt);

    const audit = (await call('GET', '/v1/audit/export?limit=1000', tok.adminA)).body.records as Json[];
    const mine = audit.filter((r) => (r.data as Json).tokenId === idOf(token));
    expect(mine.map((r) => [r.type, r.actor])).toEqual([
      ['token.created', `token:${idOf(tok.adminA)}`],
      ['token.revoked', `token:${idOf(tok.adminA)}`],
    ]);
  });

  it("answers another tenant's token id exactly like a missing one, and leaves it working", async () => {
    const theirs = await call('POST', `/v1/tokens/${ids.tokenB}/revoke`, tok.adminA);
    const none = await call('POST', '/v1/tokens/0123456789ab/revoke', tok.adminA);
    expect([theirs.status, none.status]).toEqual([404, 404]);
    expect(theirs.body.detail).toBe(`no token ${ids.tokenB}`);
    expect(theirs.text).not.toContain(CANARY);
    expect((await call('GET', '/v1/whoami', tok.viewerB)).status).toBe(200);
    expect((await call('POST', `/v1/tokens/${idOf(tok.viewerA)}/revoke`, tok.adminB)).status).toBe(404);
  });

  it('names every bad field of a create at once, and creates nothing', async () => {
    const count = () => (snapshot().tokens as unknown[]).length;
    const before = count();
    const bad = await call('POST', '/v1/tokens', tok.adminA, {
      role: 'root',
      name: 'n'.repeat(201),
      expiresIn: 'soon',
      expiresAt: 'tomorrow',
      tenant: 'beta',
    });
    expect(bad.status, bad.text).toBe(400);
    expect(bad.body.code).toBe('invalid_request');
    const paths = (bad.body.errors as { path: string; message: string }[]).map((e) => e.path);
    expect(paths).toEqual(expect.arrayContaining(['role', 'name', 'expiresIn', 'expiresAt']));
    expect(bad.text).toContain('tenant'); // the unknown member is named too
    const both = await call('POST', '/v1/tokens', tok.adminA, {
      role: 'viewer',
      expiresIn: '1d',
      expiresAt: '2099-01-01T00:00:00Z',
    });
    expect(both.status).toBe(400);
    expect(both.body.errors).toEqual([{ path: 'expiresAt', message: 'give expiresIn or expiresAt, not both' }]);
    const past = await call('POST', '/v1/tokens', tok.adminA, { role: 'viewer', expiresAt: '2001-01-01T00:00:00Z' });
    expect(past.body.errors).toEqual([{ path: 'expiresAt', message: 'must be in the future' }]);
    expect((await call('POST', '/v1/tokens', tok.adminA)).status).toBe(400);
    expect(count()).toBe(before);
  });

  it('lets an admin revoke the token it calls with: answered, then 401', async () => {
    const created = await call('POST', '/v1/tokens', tok.adminA, { role: 'admin', name: 'short-lived' });
    const self = created.body.token as string;
    const r = await call('POST', `/v1/tokens/${idOf(self)}/revoke`, self);
    expect(r.status, r.text).toBe(200);
    expect(r.body.revokedBy).toBe(`token:${idOf(self)}`);
    expect((await call('GET', '/v1/tokens', self)).status).toBe(401);
  });
});
