// The admin-ops routes (GET /v1/runs, /v1/sessions, POST /v1/runs/:id/resolve, GET /v1/audit/verify|export,
// GET /v1/doctor) in-process over a real store with real tokens: tenancy, paging, filters, refusals, and that an
// export holds nothing of another tenant and stays verifiable record by record.
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { hashRecord } from '../../../host/audit/auditLog.js';
import type { HostConfig } from '../../../host/config/hostConfig.js';
import { parseLimits } from '../../../host/config/limits.js';
import type { ApiDeps } from '../../../host/api/deps.js';
import { buildApi } from '../../../host/api/server.js';
import { reconcile } from '../../../host/recovery/reconcile.js';
import { createApiToken } from '../../../host/state/apiTokens.js';
import { ConfigRepo } from '../../../host/state/configRepo.js';
import type { Store } from '../../../host/state/store.js';
import { editAuditPastTriggers, rawDb } from '../../helpers/rawDb.js';
import { tempStore } from '../../helpers/store.js';

const closers: (() => unknown)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

const CANARY = 'CANARY-beta-7f3a9c';

/** A JSON object as the tests read it: the members they use, typed; the rest checked by the assertions. */
interface Json {
  [member: string]: unknown;
  id: string;
  queuedAt: string;
  conversationKey: string;
  seq: number;
  type: string;
  tenant: string | null;
  runs: Json[];
  sessions: Json[];
  records: Json[];
  next: unknown;
  more: boolean;
  code: string;
}

async function setUp() {
  const { store, dataDir } = tempStore();
  const config = { dataDir, limits: parseLimits({}), runnerDirs: [], logLevel: 'silent' } as unknown as HostConfig;
  const deps: ApiDeps = {
    store,
    get dispatcher(): never {
      throw new Error('the admin-ops routes do not dispatch');
    },
    config,
    log: pino({ level: 'silent' }),
    stopping: () => false,
  };
  const app = await buildApi(deps, { rate: { rate: 10_000, burst: 10_000 } });
  closers.push(
    () => store.close(),
    () => app.close(),
  );
  const token = (tenant: string, role: 'admin' | 'platform' | 'approver') =>
    createApiToken(store, { tenant, role, by: 'user:test' }).token;
  const call = async (tok: string, method: 'GET' | 'POST', url: string, payload?: object) => {
    const r = await app.inject({ method, url, payload, headers: { authorization: `Bearer ${tok}` } });
    const json = /json/.test(String(r.headers['content-type'])) && !/ndjson/.test(String(r.headers['content-type']));
    return { status: r.statusCode, body: (json ? r.json() : {}) as Json, raw: r };
  };
  return { store, call, token };
}

let runCounter = 0;
/** A queued run (no owning host: recovery interrupts it) in a session of (tenant, binding, conversation). */
function plantRun(store: Store, tenant: string, bindingId: string, conversation: string, effect = false): string {
  const { sessionId } = store.ensureSession(tenant, bindingId, `telegram:bot:private:${conversation}`);
  const runId = `run_t${String(++runCounter).padStart(4, '0')}`;
  store.append(sessionId, [
    { type: 'run.queued', runId, data: { runner: 'echo', goalRevision: 0, attempt: 1, bindingId } },
    ...(effect
      ? [
          {
            type: 'effect.intent' as const,
            runId,
            data: { effectId: `eff_${runId}`, kind: 'git.push', target: 'origin', probe: {} },
          },
        ]
      : []),
  ]);
  return runId;
}

function endRun(store: Store, runId: string, status: 'completed' | 'failed'): void {
  const run = store.run(runId)!;
  store.append(run.sessionId, [
    { type: 'run.ended', runId, data: { status, reason: 'done', exitCode: 0, signal: null } },
  ]);
}

describe('GET /v1/runs and /v1/sessions', () => {
  it("lists only the token's tenant's runs, newest first, filtered, in stable pages while runs are added", async () => {
    const { store, call, token } = await setUp();
    const mine = [
      plantRun(store, 'acme', 'bot-a', 'c1'),
      plantRun(store, 'acme', 'bot-b', 'c2'),
      plantRun(store, 'acme', 'bot-a', 'c1'),
      plantRun(store, 'acme', 'bot-a', 'c3'),
      plantRun(store, 'acme', 'bot-b', 'c2'),
    ];
    const theirs = [plantRun(store, 'beta', 'bot-a', 'c1'), plantRun(store, 'beta', 'bot-a', `c-${CANARY}`)];
    endRun(store, mine[0]!, 'failed');
    endRun(store, mine[1]!, 'completed');
    const admin = token('acme', 'admin');

    const all = await call(admin, 'GET', '/v1/runs');
    expect(all.status).toBe(200);
    const ids = (all.body.runs as { id: string }[]).map((r) => r.id);
    expect([...ids].sort()).toEqual([...mine].sort());
    expect(all.body.next).toBeNull();
    expect(all.raw.body).not.toContain(CANARY);
    for (const id of theirs) expect(all.raw.body).not.toContain(id);
    // Newest first by queue time, ties by id (the store's order).
    const times = (all.body.runs as { queuedAt: string }[]).map((r) => r.queuedAt);
    expect(times).toEqual([...times].sort().reverse());
    expect(all.body.runs[0]).not.toHaveProperty('pid');

    const failed = await call(admin, 'GET', '/v1/runs?status=failed,completed');
    expect((failed.body.runs as { id: string }[]).map((r) => r.id).sort()).toEqual([mine[0], mine[1]].sort());
    const byBinding = await call(admin, 'GET', '/v1/runs?binding=bot-b');
    expect((byBinding.body.runs as { id: string }[]).map((r) => r.id).sort()).toEqual([mine[1], mine[4]].sort());
    const session = store.run(mine[0]!)!.sessionId;
    const bySession = await call(admin, 'GET', `/v1/runs?session=${session}`);
    expect((bySession.body.runs as { id: string }[]).map((r) => r.id).sort()).toEqual([mine[0], mine[2]].sort());
    // Another tenant's session as a filter: nothing, not an error that tells it exists.
    const theirSession = store.run(theirs[0]!)!.sessionId;
    expect((await call(admin, 'GET', `/v1/runs?session=${theirSession}`)).body).toEqual({ runs: [], next: null });

    // Pages of 2, with runs added between the pages: every run listed once, the new ones only on a fresh first page.
    const seen: string[] = [];
    let before: string | null = null;
    do {
      const page = await call(admin, 'GET', `/v1/runs?limit=2${before ? `&before=${before}` : ''}`);
      expect(page.status).toBe(200);
      seen.push(...(page.body.runs as { id: string }[]).map((r) => r.id));
      before = page.body.next as string | null;
      plantRun(store, 'acme', 'bot-a', 'c9');
    } while (before);
    expect(seen).toEqual(ids);
    const fresh = await call(admin, 'GET', '/v1/runs?limit=200');
    expect(fresh.body.runs).toHaveLength(ids.length + 3);
  });

  it('refuses a bad cursor, status list or limit (naming the field), and any role but admin (403)', async () => {
    const { call, token } = await setUp();
    const admin = token('acme', 'admin');
    const bad = await call(admin, 'GET', '/v1/runs?before=not-a-cursor');
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 'invalid_request', errors: [{ path: 'query.before' }] });
    const forged = Buffer.from(JSON.stringify({ at: 1 })).toString('base64url');
    expect((await call(admin, 'GET', `/v1/sessions?before=${forged}`)).status).toBe(400);
    for (const q of ['status=FAILED', 'status=a,,b', 'limit=201', 'limit=0', 'colour=red']) {
      const r = await call(admin, 'GET', `/v1/runs?${q}`);
      expect([q, r.status, r.body.code]).toEqual([q, 400, 'invalid_request']);
    }
    for (const role of ['platform', 'approver'] as const) {
      for (const [method, url, body] of [
        ['GET', '/v1/runs'],
        ['GET', '/v1/sessions'],
        ['POST', '/v1/runs/run_x/resolve', { as: 'failed' }],
        ['GET', '/v1/audit/verify'],
        ['GET', '/v1/audit/export'],
        ['GET', '/v1/doctor'],
      ] as const) {
        const r = await call(token('acme', role), method, url, body);
        const required = method === 'GET' ? ['admin', 'viewer'] : ['admin']; // reads are a viewer's too
        expect([url, r.status, r.body.code, r.body.requiredRole]).toEqual([url, 403, 'forbidden', required]);
      }
    }
  });

  it('lists sessions by last activity, in pages, never another tenant’s', async () => {
    const { store, call, token } = await setUp();
    // Each plant in a later millisecond than the one before (ordering by time needs it; a same-millisecond tie is
    // ordered by the random session id): the clock's next tick, not a wait for an outcome.
    const nextMs = () => {
      const now = Date.now();
      while (Date.now() === now);
    };
    const first = plantRun(store, 'acme', 'bot-a', 'old');
    nextMs();
    plantRun(store, 'acme', 'bot-a', 'mid');
    nextMs();
    plantRun(store, 'acme', 'bot-b', 'new');
    plantRun(store, 'beta', 'bot-a', `x-${CANARY}`);
    const admin = token('acme', 'admin');
    // Activity in the oldest session moves it first.
    nextMs();
    endRun(store, first, 'completed');
    const all = await call(admin, 'GET', '/v1/sessions');
    expect(all.status).toBe(200);
    expect(all.raw.body).not.toContain(CANARY);
    const keys = (all.body.sessions as { conversationKey: string }[]).map((s) => s.conversationKey.split(':').at(-1));
    expect(keys).toEqual(['old', 'new', 'mid']);
    expect(all.body.sessions[0]).toMatchObject({ bindingId: 'bot-a', runs: 1, paused: null });
    const p1 = await call(admin, 'GET', '/v1/sessions?limit=2');
    const p2 = await call(admin, 'GET', `/v1/sessions?limit=2&before=${p1.body.next}`);
    expect([...p1.body.sessions, ...p2.body.sessions].map((s: { id: string }) => s.id)).toEqual(
      all.body.sessions.map((s) => s.id),
    );
    expect(p2.body.next).toBeNull();
    expect((await call(admin, 'GET', '/v1/sessions?binding=bot-b')).body.sessions).toHaveLength(1);
  });
});

describe('POST /v1/runs/:id/resolve', () => {
  it('resolves an interrupted run’s open effect (audited as the token), then 409; others get 404', async () => {
    const { store, call, token } = await setUp();
    const runId = plantRun(store, 'acme', 'bot-a', 'c1', true);
    const report = await reconcile(store); // what a host start does after a crash
    expect(report.pausedSessions).toEqual([store.run(runId)!.sessionId]);
    const admin = token('acme', 'admin');
    const other = await call(token('beta', 'admin'), 'POST', `/v1/runs/${runId}/resolve`, { as: 'failed' });
    const missing = await call(token('beta', 'admin'), 'POST', '/v1/runs/run_nope/resolve', { as: 'failed' });
    expect(other.status).toBe(404);
    expect({ ...other.body, detail: 0, instance: 0, requestId: 0 }).toEqual({
      ...missing.body,
      detail: 0,
      instance: 0,
      requestId: 0,
    });
    expect((await call(admin, 'POST', `/v1/runs/${runId}/resolve`, { as: 'maybe' })).status).toBe(400);
    const r = await call(admin, 'POST', `/v1/runs/${runId}/resolve`, { as: 'failed', by: 'ada' });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ runId, as: 'failed', resolved: [`eff_${runId}`], resumed: true });
    const tokenId = admin.split('_')[1];
    const audited = store.audit.records({ runId, types: ['effect.resolved'] });
    expect(audited).toEqual([
      expect.objectContaining({
        actor: `api:${tokenId}/user:ada`,
        data: { effectId: `eff_${runId}`, status: 'failed', by: 'ada' },
      }),
    ]);
    expect(store.session(store.run(runId)!.sessionId).paused).toBeNull();
    const again = await call(admin, 'POST', `/v1/runs/${runId}/resolve`, { as: 'failed' });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: 'conflict', runStatus: 'interrupted' });
  });
});

describe('GET /v1/audit/export and /v1/audit/verify', () => {
  it("a deletion stays its tenant's when another tenant re-creates the id (versions start again)", async () => {
    const { store, call, token } = await setUp();
    const repo = new ConfigRepo(store);
    repo.put('binding', 'reused', { id: 'reused', tenant: 'beta' }, 'api:betatoken/user:beta-user');
    repo.delete('binding', 'reused', 'api:betatoken/user:beta-user');
    repo.put('binding', 'reused', { id: 'reused', tenant: 'acme' }, 'user:acme');
    type Record = { type: string; actor: string };
    const deletions = async (tenant: string) => {
      const answer = await call(token(tenant, 'admin'), 'GET', '/v1/audit/export');
      return (answer.body.records as unknown as Record[])
        .filter((r) => r.type === 'config.deleted')
        .map((r) => r.actor);
    };
    expect(await deletions('acme')).toEqual([]);
    expect(await deletions('beta')).toEqual(['api:betatoken/user:beta-user']);
  });

  async function populated() {
    const h = await setUp();
    const repo = new ConfigRepo(h.store);
    repo.put('model', 'beta-model', { id: 'beta-model', tenant: 'beta', note: CANARY }, 'user:test');
    repo.put('model', 'acme-model', { id: 'acme-model', tenant: 'acme' }, 'user:test');
    repo.delete('model', 'beta-model', 'user:test');
    plantRun(h.store, 'acme', 'bot-a', 'c1');
    plantRun(h.store, 'beta', 'bot-a', `conv-${CANARY}`, true);
    h.token('beta', 'platform');
    return h;
  }

  it("exports the tenant's records only (the host's to the default tenant), each verifiable by its hash", async () => {
    const { call, token } = await populated();
    const acme = await call(token('acme', 'admin'), 'GET', '/v1/audit/export');
    expect(acme.status).toBe(200);
    expect(acme.raw.body).not.toContain(CANARY);
    const records = acme.body.records;
    expect(records.every((r) => r.tenant === 'acme')).toBe(true);
    expect(records.map((r) => r.type)).toEqual(
      expect.arrayContaining(
        ['config.created', 'session.created', 'run.queued', 'token.created'].filter((t) => t !== 'run.queued'),
      ),
    );
    for (const r of records) {
      const { hash, tenant: _t, ...rest } = r;
      expect(hashRecord(rest as never)).toBe(hash);
    }
    expect(acme.body.more).toBe(false);

    const beta = await call(token('beta', 'admin'), 'GET', '/v1/audit/export?format=jsonl');
    expect(beta.raw.headers['content-type']).toMatch(/^application\/x-ndjson/);
    const lines = beta.raw.body
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Json);
    expect(lines.every((r) => r.tenant === 'beta')).toBe(true);
    // The deletion (its record has no spec) is the tenant's whose object it was.
    expect(lines.map((r) => r.type)).toEqual(
      expect.arrayContaining(['config.created', 'config.deleted', 'session.created', 'token.created']),
    );
    expect(beta.raw.headers['paddock-audit-more']).toBe('false');

    const operator = await call(token('default', 'admin'), 'GET', '/v1/audit/export');
    const types = (operator.body.records as { type: string; tenant: string | null }[]).map((r) => r.type);
    expect(types).toContain('audit.key_created');
    expect(operator.raw.body).not.toContain(CANARY);
    expect(
      (operator.body.records as { tenant: string | null }[]).every((r) => r.tenant === null || r.tenant === 'default'),
    ).toBe(true);

    // Pages: limit 1 walks the same records, one at a time.
    // (One token for the walk: making a token is audited, so a new one per page would extend the log forever.)
    const walker = token('acme', 'admin');
    const total = (await call(walker, 'GET', '/v1/audit/export')).body.records as { seq: number }[];
    const walked: number[] = [];
    let after = 0;
    for (;;) {
      const page = await call(walker, 'GET', `/v1/audit/export?limit=1&after=${after}`);
      walked.push(...(page.body.records as { seq: number }[]).map((r) => r.seq));
      after = page.body.next as number;
      if (!page.body.more) break;
    }
    expect(walked).toEqual(total.map((r) => r.seq));
    expect(walked.slice(0, records.length)).toEqual(records.map((r) => r.seq));
  });

  it('verifies the chain, and names a tampered record (showing it only to a tenant that may read it)', async () => {
    const { store, call, token } = await populated();
    const ok = await call(token('beta', 'admin'), 'GET', '/v1/audit/verify');
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ ok: true });
    const seq = rawDb(store)
      .prepare("SELECT seq FROM audit WHERE type = 'session.created' AND data LIKE ?")
      .pluck()
      .get(`%conv-${CANARY}%`) as number;
    editAuditPastTriggers(store, `UPDATE audit SET data = replace(data, 'conv-', 'elsewhere-') WHERE seq = ${seq}`);
    const beta = await call(token('beta', 'admin'), 'GET', '/v1/audit/verify');
    expect(beta.body).toMatchObject({
      ok: false,
      problem: 'edited',
      seq,
      record: { seq, type: 'session.created', tenant: 'beta' },
    });
    const acme = await call(token('acme', 'admin'), 'GET', '/v1/audit/verify');
    expect(acme.body).toMatchObject({ ok: false, problem: 'edited', seq, record: null });
    expect(acme.raw.body).not.toMatch(/elsewhere|CANARY/);
  });
});

describe('GET /v1/audit/verify, repeated', () => {
  it('is bounded per tenant and per server (each walks the whole chain): past it, 429 naming the scope', async () => {
    const { call, token } = await setUp();
    const verify = async (tenant: string) => call(token(tenant, 'admin'), 'GET', '/v1/audit/verify');
    const gamma = [await verify('gamma'), await verify('gamma'), await verify('gamma')];
    expect(gamma.map((r) => r.status)).toEqual([200, 200, 429]);
    expect(gamma[2]!.body).toMatchObject({ code: 'rate_limited', scope: 'tenant' });
    expect(Number(gamma[2]!.raw.headers['retry-after'])).toBeGreaterThan(0);
    expect((await verify('delta')).status).toBe(200);
    expect((await verify('delta')).status).toBe(200);
    // Four verified in all: the server's burst is spent for a third tenant too.
    const epsilon = [await verify('epsilon'), await verify('epsilon')];
    expect(epsilon.some((r) => r.status === 429 && r.body.scope === 'server')).toBe(true);
  });
});

describe('GET /v1/doctor', () => {
  it("answers doctor's report with only the token's tenant's missing secret references", async () => {
    const { store, call, token } = await setUp();
    const repo = new ConfigRepo(store);
    const ref = (name: string) => ({ env: name });
    repo.put(
      'model',
      'm-beta',
      { id: 'm-beta', tenant: 'beta', provider: 'anthropic', apiKey: ref(`BETA_${CANARY.replace(/-/g, '_')}`) },
      'user:test',
    );
    repo.put(
      'model',
      'm-acme',
      { id: 'm-acme', tenant: 'acme', provider: 'anthropic', apiKey: ref('ACME_UNSET_KEY_1') },
      'user:test',
    );
    const r = await call(token('acme', 'admin'), 'GET', '/v1/doctor');
    expect(r.status).toBe(200);
    expect(r.body.missingSecrets).toEqual([
      expect.stringContaining('model m-acme apiKey: environment variable ACME_UNSET_KEY_1 is not set'),
    ]);
    expect(r.raw.body).not.toContain('BETA_');
    expect(r.body).toHaveProperty('machine.bwrap');
    expect(Object.keys(r.body.backends as object)).toContain('process');
    expect(Array.isArray(r.body.harnesses)).toBe(true);
  });
});
