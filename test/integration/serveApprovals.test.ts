// The approver's endpoints of a real `paddock serve` (child process, real HTTP): roles (platform → 403), tenancy
// (another tenant's ids → 404 like unknown ones), approve/deny audited with the token, 409s that say why, grants
// listed and revoked — on approvals a store wrote into the same data folder.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiToken } from '../../host/state/apiTokens.js';
import { approvalById, insertApproval, type NewApproval } from '../../host/state/approvals.js';
import { capabilityGrantById, insertCapabilityGrant } from '../../host/state/capabilityGrants.js';
import { Store } from '../../host/state/store.js';
import { rawDb } from '../helpers/rawDb.js';
import { startServe, type ServeChild } from '../helpers/serve.js';

const dataDir = mkdtempSync(join(tmpdir(), 'paddock-serve-approvals-'));
let serve: ServeChild;
let store: Store;
const tok = { approver: '', admin: '', platform: '', beta: '' };
const tokenIds = { approver: '', admin: '', platform: '', beta: '' };
const ids = { a: '', b: '', c: '', narrow: '', expired: '', beta: '' };
/** Real sessions (an approval's audit records belong to its session's tenant). */
const sessions = { acme: '', beta: '' };
const hour = (h: number) => new Date(Date.now() + h * 3_600_000).toISOString();

let n = 0;
function ask(over: Partial<NewApproval> = {}): NewApproval {
  n += 1;
  return {
    tenant: 'acme',
    runId: 'run_1',
    sessionId: sessions.acme,
    bindingId: 'helper',
    via: 'runner',
    effect: 'fs.write',
    target: { kind: 'path', value: 'src/app.ts' },
    summary: `edit the app (${n})`,
    dataClass: null,
    destination: null,
    risk: { score: 20, level: 'low', reasons: ['in the workspace'] },
    goalRevision: 1,
    groupId: null,
    requestedLifetime: 'session',
    createdAt: new Date(Date.now() - 60_000 + n).toISOString(),
    expiresAt: hour(1),
    ...over,
  };
}

beforeAll(async () => {
  store = Store.open({ dataDir });
  for (const [key, tenant, role] of [
    ['approver', 'acme', 'approver'],
    ['admin', 'acme', 'admin'],
    ['platform', 'acme', 'platform'],
    ['beta', 'beta', 'approver'],
  ] as const) {
    const created = createApiToken(store, { tenant, role, by: 'user:test' });
    tok[key] = created.token;
    tokenIds[key] = created.info.id;
  }
  sessions.acme = store.ensureSession('acme', 'helper', 'chat-1').sessionId;
  sessions.beta = store.ensureSession('beta', 'beta-bot', 'chat-2').sessionId;
  ids.a = insertApproval(store, ask()).id;
  ids.b = insertApproval(store, ask()).id;
  ids.c = insertApproval(store, ask({ runId: 'run_2' })).id;
  ids.narrow = insertApproval(store, ask({ requestedLifetime: 'run' })).id;
  ids.expired = insertApproval(store, ask({ createdAt: hour(-2), expiresAt: hour(-1) })).id;
  ids.beta = insertApproval(
    store,
    ask({ tenant: 'beta', bindingId: 'beta-bot', runId: 'run_b', sessionId: sessions.beta }),
  ).id;
  serve = await startServe(dataDir);
}, 60_000);
afterAll(async () => {
  await serve?.stop();
  store?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

type Json = Record<string, unknown>;
async function call(token: string, method: 'GET' | 'POST', path: string, body?: unknown) {
  const r = await fetch(`${serve.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: r.status, body: (await r.json()) as Json, type: r.headers.get('content-type') };
}

describe('GET /v1/approvals', () => {
  it("lists only the token's tenant's approvals, oldest first, a keyset page at a time", async () => {
    const first = await call(tok.approver, 'GET', '/v1/approvals?limit=2');
    expect(first.status).toBe(200);
    const page1 = first.body.approvals as { id: string; tenant?: string; target: unknown }[];
    expect(page1.map((a) => a.id)).toEqual([ids.expired, ids.a]);
    expect(page1[1]).toMatchObject({ status: 'pending', target: { kind: 'path', value: 'src/app.ts' } });
    expect(page1[1]!.tenant).toBeUndefined();
    const rest = await call(tok.approver, 'GET', `/v1/approvals?limit=10&after=${String(first.body.next)}`);
    expect((rest.body.approvals as { id: string }[]).map((a) => a.id)).toEqual([ids.b, ids.c, ids.narrow]);
    expect(rest.body.next).toBeNull();
    const run2 = await call(tok.admin, 'GET', '/v1/approvals?runId=run_2&status=pending');
    expect((run2.body.approvals as { id: string }[]).map((a) => a.id)).toEqual([ids.c]);
    const beta = await call(tok.beta, 'GET', '/v1/approvals');
    expect((beta.body.approvals as { id: string }[]).map((a) => a.id)).toEqual([ids.beta]);
  });

  it('refuses a platform token (403), a bad status and a cursor of another tenant (400 naming the field)', async () => {
    const platform = await call(tok.platform, 'GET', '/v1/approvals');
    expect(platform.status).toBe(403);
    // A read: a viewer's too (deciding stays the approver's and the admin's).
    const required = ['approver', 'admin', 'viewer'];
    expect(platform.body).toMatchObject({ code: 'forbidden', requiredRole: required, role: 'platform' });
    const status = await call(tok.approver, 'GET', '/v1/approvals?status=open');
    expect(status.status).toBe(400);
    expect(JSON.stringify(status.body.errors)).toContain('querystring.status');
    const cursor = await call(tok.approver, 'GET', `/v1/approvals?after=${ids.beta}`);
    expect(cursor.status).toBe(400);
    expect(cursor.body.errors).toEqual([expect.objectContaining({ path: 'query.after' })]);
  });

  it("GET /v1/approvals/:id: the tenant's approval; another tenant's is 404 like an unknown id", async () => {
    const mine = await call(tok.approver, 'GET', `/v1/approvals/${ids.a}`);
    expect(mine).toMatchObject({ status: 200, body: { id: ids.a, summary: expect.stringMatching(/^edit the app/) } });
    const other = await call(tok.approver, 'GET', `/v1/approvals/${ids.beta}`);
    const unknown = await call(tok.approver, 'GET', '/v1/approvals/apr_nope');
    expect([other.status, unknown.status]).toEqual([404, 404]);
    expect(other.body.detail).toBe(`no approval ${ids.beta}`);
    expect(other.type).toContain('application/problem+json');
    expect((await call(tok.platform, 'GET', `/v1/approvals/${ids.a}`)).status).toBe(403);
  });
});

describe('POST /v1/approvals/:id/approve and /deny', () => {
  it('approve with a lifetime: a grant of exactly the target, audited with the token; again is 409', async () => {
    const r = await call(tok.approver, 'POST', `/v1/approvals/${ids.a}/approve`, {
      lifetime: 'session',
      reason: 'fine',
      by: 'ada',
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const actor = `api:${tokenIds.approver}/user:ada`;
    expect(r.body).toMatchObject({
      approval: { id: ids.a, status: 'approved', decidedBy: actor, reason: 'fine' },
      grant: { capability: 'fs.write', scope: { kind: 'path', value: 'src/app.ts' }, lifetime: 'session' },
    });
    const grantId = (r.body.grant as { id: string }).id;
    expect(capabilityGrantById(store, grantId)).toMatchObject({
      tenant: 'acme',
      grantor: actor,
      sessionId: sessions.acme,
    });
    const audited = rawDb(store).prepare("SELECT actor FROM audit WHERE type = 'approval.approved'").pluck().all();
    expect(audited).toEqual([actor]);

    const again = await call(tok.admin, 'POST', `/v1/approvals/${ids.a}/deny`, {});
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: 'approval_not_pending', status: 'approved', decidedBy: actor });
  });

  it('deny records the reason; once (the default) leaves no grant', async () => {
    const denied = await call(tok.admin, 'POST', `/v1/approvals/${ids.b}/deny`, { reason: 'not that file' });
    expect(denied.status).toBe(200);
    expect(denied.body).toMatchObject({
      approval: { status: 'denied', reason: 'not that file', decidedBy: `api:${tokenIds.admin}` },
      grant: null,
    });
    const once = await call(tok.approver, 'POST', `/v1/approvals/${ids.c}/approve`); // no body at all
    expect(once.body).toMatchObject({ approval: { status: 'approved', grantId: null }, grant: null });
  });

  it('409 wider_than_asked and 409 for an expired approval; nothing is decided', async () => {
    const wide = await call(tok.approver, 'POST', `/v1/approvals/${ids.narrow}/approve`, { lifetime: 'binding' });
    expect(wide.status).toBe(409);
    expect(wide.body).toMatchObject({ code: 'wider_than_asked', requestedLifetime: 'run' });
    expect(approvalById(store, ids.narrow)!.status).toBe('pending');
    const late = await call(tok.approver, 'POST', `/v1/approvals/${ids.expired}/approve`, {});
    expect(late.status).toBe(409);
    expect(late.body).toMatchObject({ code: 'approval_not_pending', status: 'expired', decidedBy: 'host' });
  });

  it("refuses a platform token (403), another tenant's approval (404), a malformed body (400)", async () => {
    const platform = await call(tok.platform, 'POST', `/v1/approvals/${ids.narrow}/approve`, {});
    expect(platform.status).toBe(403);
    const other = await call(tok.approver, 'POST', `/v1/approvals/${ids.beta}/deny`, {});
    expect(other.status).toBe(404);
    expect(approvalById(store, ids.beta)!.status).toBe('pending');
    const bad = await call(tok.approver, 'POST', `/v1/approvals/${ids.narrow}/approve`, { lifetime: 'forever' });
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toEqual([expect.objectContaining({ path: 'lifetime' })]);
    const extra = await call(tok.approver, 'POST', `/v1/approvals/${ids.narrow}/deny`, { scope: '**' });
    expect(extra.status).toBe(400);
    expect(approvalById(store, ids.narrow)!.status).toBe('pending');
  });
});

describe('GET /v1/grants and POST /v1/grants/:id/revoke', () => {
  it("lists the tenant's live grants; revoke ends one (audited); again 409; another tenant's 404", async () => {
    const base = { capability: 'network', scope: { kind: 'domain', value: 'x.example' }, grantor: 'user:op' } as const;
    const mine = insertCapabilityGrant(store, { ...base, lifetime: 'binding', tenant: 'acme', bindingId: 'helper' });
    const theirs = insertCapabilityGrant(store, {
      ...base,
      lifetime: 'binding',
      tenant: 'beta',
      bindingId: 'beta-bot',
    });
    const listed = await call(tok.approver, 'GET', '/v1/grants');
    expect(listed.status).toBe(200);
    const live = (listed.body.grants as { id: string }[]).map((g) => g.id);
    expect(live).toContain(mine.id);
    expect(live).not.toContain(theirs.id);

    expect((await call(tok.platform, 'POST', `/v1/grants/${mine.id}/revoke`, {})).status).toBe(403);
    expect((await call(tok.approver, 'POST', `/v1/grants/${theirs.id}/revoke`, {})).status).toBe(404);
    const revoked = await call(tok.approver, 'POST', `/v1/grants/${mine.id}/revoke`, { by: 'ada' });
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ id: mine.id, revokedBy: `api:${tokenIds.approver}/user:ada` });
    const again = await call(tok.admin, 'POST', `/v1/grants/${mine.id}/revoke`);
    expect(again.status, JSON.stringify(again.body)).toBe(409);
    expect(again.body).toMatchObject({ code: 'already_revoked', revokedBy: `api:${tokenIds.approver}/user:ada` });

    const after = await call(tok.approver, 'GET', '/v1/grants');
    expect((after.body.grants as { id: string }[]).map((g) => g.id)).not.toContain(mine.id);
    const all = await call(tok.approver, 'GET', '/v1/grants?all=true&binding=helper');
    expect((all.body.grants as { id: string }[]).map((g) => g.id)).toContain(mine.id);
    expect(capabilityGrantById(store, theirs.id)!.revokedAt).toBeUndefined();
  });

  it("the audit export gives a tenant's admin its approval and grant records, not another tenant's", async () => {
    const exported = await call(tok.admin, 'GET', '/v1/audit/export?limit=1000');
    expect(exported.status).toBe(200);
    const records = exported.body.records as { type: string; data: { approvalId?: string; tenant?: string } }[];
    const approvalIds = records.filter((r) => r.type.startsWith('approval.')).map((r) => r.data.approvalId);
    expect(approvalIds).toEqual(expect.arrayContaining([ids.a, ids.b, ids.c, ids.narrow, ids.expired]));
    expect(approvalIds).not.toContain(ids.beta);
    const grants = records.filter((r) => r.type.startsWith('grant.'));
    expect(grants.map((r) => r.type)).toEqual(expect.arrayContaining(['grant.created', 'grant.revoked']));
    expect(grants.every((r) => r.data.tenant === 'acme')).toBe(true);
  });
});
