// The configuration admin endpoints in process: `paddock serve`'s own server (buildApi over a real host's services:
// store, dispatcher, redactor), real tokens, two tenants (acme, beta) sharing one store. Runs that need a runner
// process to be held are in test/integration/serveAdmin.test.ts.
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildApi } from '../../../host/api/server.js';
import { ConfigRepo } from '../../../host/state/configRepo.js';
import { createApiToken } from '../../../host/state/apiTokens.js';
import { tempHost } from '../../helpers/host.js';

// Not named like a credential: the host learns it is a secret only from the configuration that references it.
const CANARY_ENV = 'PADDOCK_TEST_ADMIN_CONFIG_CANARY';
const CANARY = `canary-admin-config-${process.pid}-Hq4Zt9`;

let host: ReturnType<typeof tempHost>;
let app: FastifyInstance;
const logLines: string[] = [];
const answers: string[] = [];
/** Tenant "acme" of these tests is the operator's tenant, whose admin may set host-level fields; a tenant's own admin
 * may not (test/unit/api/tenantAdmin.test.ts). */
const ACME = 'default';
const tok = { acme: '', acmePlatform: '', acmeApprover: '', beta: '' };
const tokenId = (t: string) => t.split('_')[1]!;

type Json = Record<string, unknown> & { errors?: { path: string; message: string }[] };
async function call(token: string, method: 'GET' | 'POST', url: string, payload?: unknown) {
  const r = await app.inject({
    method,
    url,
    headers: { authorization: `Bearer ${token}` },
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
  answers.push(r.body, JSON.stringify(r.headers));
  const body = r.headers['content-type']?.toString().includes('json') ? (r.json() as Json) : ({} as Json);
  return { status: r.statusCode, body, text: r.body, headers: r.headers };
}

const betaConfig = {
  resources: { models: [{ id: 'beta-model', tenant: 'beta', provider: 'scripted', model: 'scripted-1' }] },
  bindings: [
    {
      id: 'beta-bot',
      tenant: 'beta',
      runner: 'echo',
      sandbox: 'process',
      route: { platform: 'telegram', bot: 'beta' },
      grants: { models: ['beta-model'] },
    },
  ],
};

beforeAll(async () => {
  process.env[CANARY_ENV] = CANARY;
  host = tempHost();
  const log = pino(
    { level: 'info' },
    new Writable({
      write(chunk: Buffer, _enc, done) {
        logLines.push(chunk.toString());
        done();
      },
    }),
  );
  app = await buildApi({
    store: host.store,
    dispatcher: host.dispatcher,
    config: host.config,
    log,
    stopping: () => false,
    redactor: host.redactor,
    // `paddock serve --api-host-config`: the operator's tenant may make resources (tenantAdmin.test.ts: without it).
    hostConfig: true,
    // Many changes by one tenant in quick succession; the tenant's rate is tenantAdmin.test.ts's.
    configChangeRate: { rate: 10_000, burst: 10_000 },
  });
  // beta's objects, applied by the operator (the whole store).
  host.apply(betaConfig);
  const make = (tenant: string, role: 'admin' | 'platform' | 'approver') =>
    createApiToken(host.store, { tenant, role, by: 'user:test' }).token;
  tok.acme = make(ACME, 'admin');
  tok.acmePlatform = make(ACME, 'platform');
  tok.acmeApprover = make(ACME, 'approver');
  tok.beta = make('beta', 'admin');
});

afterAll(async () => {
  await app.close();
  await host.close();
  delete process.env[CANARY_ENV];
  // The canary never left the server: no answer, no header, no log line holds it.
  expect(answers.filter((a) => a.includes(CANARY))).toEqual([]);
  expect(logLines.filter((l) => l.includes(CANARY))).toEqual([]);
});

const acmeConfig = () => ({
  resources: {
    models: [{ id: 'acme-model', provider: 'anthropic', model: 'claude-x', apiKey: { env: CANARY_ENV } }],
  },
  bindings: [
    {
      id: 'acme-bot',
      runner: 'echo',
      sandbox: 'process',
      route: { platform: 'telegram', bot: 'acme' },
      grants: { models: ['acme-model'] },
    },
  ],
});

const betaUntouched = () => {
  const repo = new ConfigRepo(host.store);
  expect(repo.get('binding', 'beta-bot')).toMatchObject({ version: 1, spec: { tenant: 'beta', enabled: true } });
  expect(repo.get('model', 'beta-model')).toMatchObject({ version: 1, spec: { tenant: 'beta' } });
};

describe('admin config endpoints: roles', () => {
  const routes: [string, string, unknown?][] = [
    ['GET', '/v1/runners'],
    ['GET', '/v1/config'],
    ['GET', '/v1/resources'],
    ['GET', '/v1/bindings'],
    ['POST', '/v1/config/apply', { config: {}, dryRun: true }],
    ['GET', '/v1/bindings/acme-bot'],
    ['POST', '/v1/bindings/acme-bot/enable', {}],
    ['POST', '/v1/bindings/acme-bot/disable', {}],
    ['GET', '/v1/bindings/acme-bot/explain'],
    // Bodies that are not valid: the role is refused first, not the body.
    ['POST', '/v1/config/apply', { nonsense: 1 }],
    ['POST', '/v1/bindings/acme-bot/disable', { cancel_active: 'yes' }],
  ];
  it('a platform or approver token gets 403 naming the role it needs, before anything is looked at', async () => {
    for (const [method, url, body] of routes)
      for (const [token, role] of [
        [tok.acmePlatform, 'platform'],
        [tok.acmeApprover, 'approver'],
      ] as const) {
        const r = await call(token, method as 'GET', url, body);
        expect([url, r.status, r.body.code]).toEqual([url, 403, 'forbidden']);
        // A read is also a viewer's; a change is the admin's alone.
        const required = method === 'GET' ? ['admin', 'viewer'] : ['admin'];
        expect(r.body).toMatchObject({ requiredRole: required, role });
        expect(r.body.detail).toContain(`needs ${required.join(' or ')}`);
      }
  });
});

describe('admin config endpoints: apply and read', () => {
  beforeEach(async () => {
    // acme starts empty each time (prune of an empty file removes only acme's objects).
    const r = await call(tok.acme, 'POST', '/v1/config/apply', { config: {}, prune: true });
    expect(r.status).toBe(200);
    betaUntouched();
  });

  it("apply stores the token's objects in its tenant, audited as it; config shows only that tenant", async () => {
    const r = await call(tok.acme, 'POST', '/v1/config/apply', { config: acmeConfig(), by: 'alice' });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({
      dryRun: false,
      changes: [
        { kind: 'model', id: 'acme-model', action: 'created' },
        { kind: 'binding', id: 'acme-bot', action: 'created' },
      ],
      missingSecrets: [],
    });
    const repo = new ConfigRepo(host.store);
    expect(repo.get('binding', 'acme-bot')?.spec).toMatchObject({ tenant: ACME });
    expect(repo.history('binding', 'acme-bot').at(-1)?.by).toBe(`api:${tokenId(tok.acme)}/user:alice`);
    const audit = host.store.audit.records().filter((a) => a.type === 'config.created');
    expect(audit.at(-1)).toMatchObject({ actor: `api:${tokenId(tok.acme)}/user:alice` });

    const config = await call(tok.acme, 'GET', '/v1/config');
    expect(config.status).toBe(200);
    expect(config.body).toMatchObject({
      resources: { models: [{ id: 'acme-model', tenant: ACME, apiKey: { env: CANARY_ENV } }] },
      bindings: [{ id: 'acme-bot', tenant: ACME }],
    });
    expect(config.text).not.toContain('beta');
    const yaml = await call(tok.acme, 'GET', '/v1/config?format=yaml');
    expect(yaml.status).toBe(200);
    expect(yaml.headers['content-type']).toMatch(/^application\/yaml/);
    expect(yaml.text).toContain('id: acme-bot');
    expect(yaml.text).toContain(`env: ${CANARY_ENV}`);
    expect(yaml.text).not.toContain('beta');
    const bad = await call(tok.acme, 'GET', '/v1/config?format=xml');
    expect([bad.status, bad.body.errors?.[0]?.path]).toEqual([400, 'querystring.format']);

    const betaView = await call(tok.beta, 'GET', '/v1/config');
    expect(betaView.body).toMatchObject({
      bindings: [{ id: 'beta-bot' }],
      resources: { models: [{ id: 'beta-model' }] },
    });
    expect(betaView.text).not.toContain('acme');
    expect((await call(tok.acme, 'GET', '/v1/bindings')).body).toEqual([
      expect.objectContaining({ id: 'acme-bot', version: 1 }),
    ]);
    expect((await call(tok.acme, 'GET', '/v1/resources')).body).toEqual([
      expect.objectContaining({ kind: 'model', id: 'acme-model' }),
    ]);
    const show = await call(tok.acme, 'GET', '/v1/bindings/acme-bot');
    expect(show.body).toMatchObject({ id: 'acme-bot', history: [{ version: 1, action: 'created' }] });
    betaUntouched();
  });

  it('YAML works like JSON; dry run answers what would change and writes nothing', async () => {
    const yaml = 'bindings:\n  - { id: acme-y, runner: echo, sandbox: process, route: { platform: slack } }\n';
    const before = host.store.audit.records().length;
    const dry = await call(tok.acme, 'POST', '/v1/config/apply', { yaml, dryRun: true });
    expect(dry.status, dry.text).toBe(200);
    expect(dry.body).toMatchObject({ dryRun: true, changes: [{ kind: 'binding', id: 'acme-y', action: 'created' }] });
    expect(new ConfigRepo(host.store).get('binding', 'acme-y')).toBeUndefined();
    expect(host.store.audit.records().length).toBe(before);
    const real = await call(tok.acme, 'POST', '/v1/config/apply', { yaml });
    expect(real.body).toMatchObject({ dryRun: false, changes: [{ action: 'created' }] });
    const prune = await call(tok.acme, 'POST', '/v1/config/apply', { config: {}, prune: true, dryRun: true });
    expect(prune.body).toMatchObject({ changes: [{ kind: 'binding', id: 'acme-y', action: 'deleted' }] });
    expect(new ConfigRepo(host.store).get('binding', 'acme-y')).toBeDefined();
  });

  it('an object naming another tenant or taking its id is refused at its field; beta is untouched', async () => {
    const config = {
      resources: { models: [{ id: 'beta-model', provider: 'scripted', model: 'mine-now' }] },
      bindings: [
        { ...betaConfig.bindings[0], id: 'sneaky', route: { platform: 'telegram', bot: 'sneaky' }, grants: {} },
        { id: 'beta-bot', runner: 'echo', sandbox: 'process', route: { platform: 'x' }, enabled: false },
      ],
    };
    for (const dryRun of [true, false]) {
      const r = await call(tok.acme, 'POST', '/v1/config/apply', { config, dryRun });
      expect(r.status).toBe(400);
      expect(r.body.code).toBe('invalid_request');
      expect(r.body.errors?.map((e) => e.path)).toEqual([
        'config.resources.models[0].id',
        'config.bindings[0].tenant',
        'config.bindings[1].id',
      ]);
      expect(r.body.errors?.[1]?.message).toContain('tenant "default" only');
      expect(r.body.errors?.[0]?.message).toMatch(/in use .*choose another/);
      expect(r.text).not.toContain('scripted-1'); // nothing of beta's object itself
    }
    // A binding of acme granting beta's model: "no such resource", as if it did not exist.
    const grant = await call(tok.acme, 'POST', '/v1/config/apply', {
      config: { bindings: [{ ...acmeConfig().bindings[0], grants: { models: ['beta-model'] } }] },
    });
    expect(grant.status).toBe(400);
    expect(grant.body.errors).toEqual([
      { path: 'config.bindings[0].grants.models[0]', message: 'no models resource "beta-model"' },
    ]);
    betaUntouched();
  });

  it('prune removes only the tenant’s own objects', async () => {
    expect((await call(tok.acme, 'POST', '/v1/config/apply', { config: acmeConfig() })).status).toBe(200);
    const r = await call(tok.acme, 'POST', '/v1/config/apply', { config: {}, prune: true });
    expect(r.body).toMatchObject({
      changes: [
        { kind: 'binding', id: 'acme-bot', action: 'deleted' },
        { kind: 'model', id: 'acme-model', action: 'deleted' },
      ],
    });
    betaUntouched();
  });

  it('a malformed configuration names every bad field at once and changes nothing', async () => {
    const r = await call(tok.acme, 'POST', '/v1/config/apply', {
      config: {
        resources: { models: [{ id: 'Bad Id', provider: 'nope', model: 'm' }] },
        bindings: [
          { id: 'b1', runner: 'no-such-runner', route: { platform: 'telegram' }, sandboxx: 'process' },
          { id: 'b2', runner: 'echo', sandbox: 'process', route: { platform: 'telegram' }, grants: { models: ['x'] } },
        ],
      },
    });
    expect(r.status).toBe(400);
    expect(r.body.errors?.map((e) => e.path).sort()).toEqual(
      [
        'config.resources.models[0].id',
        'config.resources.models[0].provider',
        'config.bindings[0]',
        'config.bindings[1].grants.models[0]',
      ].sort(),
    );
    expect(r.body.errors?.find((e) => e.path === 'config.bindings[0]')?.message).toContain('did you mean "sandbox"');
    expect(new ConfigRepo(host.store).get('binding', 'b2')).toBeUndefined();
    const yaml = await call(tok.acme, 'POST', '/v1/config/apply', { yaml: 'bindings: [ {id: x' });
    expect([yaml.status, yaml.body.errors?.[0]?.path]).toEqual([400, 'yaml']);
    const body = await call(tok.acme, 'POST', '/v1/config/apply', { yaml: 'x', config: {}, dry_run: true });
    expect(body.status).toBe(400);
    expect(body.body.errors?.map((e) => e.path).sort()).toEqual(['', 'yaml']);
  });

  it("a secret's value in a configuration is refused, never echoed; config answers carry references", async () => {
    expect((await call(tok.acme, 'POST', '/v1/config/apply', { config: acmeConfig() })).status).toBe(200);
    const leaky = acmeConfig();
    (leaky.bindings[0] as Record<string, unknown>).description = `note ${CANARY}`;
    const inline = { ...leaky, resources: { ...leaky.resources } };
    const r = await call(tok.acme, 'POST', '/v1/config/apply', { config: inline });
    expect(r.status).toBe(400);
    expect(r.body.errors?.[0]).toMatchObject({ path: 'config.bindings[0].description' });
    expect(r.body.errors?.[0]?.message).toMatch(/value of a secret/);
    const yaml = await call(tok.acme, 'POST', '/v1/config/apply', {
      yaml: `resources:\n  models:\n    - { id: acme-model, provider: anthropic, model: m, apiKey: "${CANARY}" }\n`,
    });
    expect(yaml.status).toBe(400);
    expect(yaml.body.errors?.map((e) => e.path)).toContain('resources.models[0].apiKey');
    for (const url of ['/v1/config', '/v1/config?format=yaml', '/v1/resources', '/v1/bindings'])
      expect((await call(tok.acme, 'GET', url)).status).toBe(200);
    // (afterAll greps every answer and log line for the canary.)
  });
});

describe('admin binding endpoints', () => {
  beforeAll(async () => {
    expect((await call(tok.acme, 'POST', '/v1/config/apply', { config: acmeConfig() })).status).toBe(200);
  });

  it('enable and disable are audited as the token and say whether anything changed', async () => {
    const off = await call(tok.acme, 'POST', '/v1/bindings/acme-bot/disable', { by: 'bob' });
    expect(off.status, off.text).toBe(200);
    expect(off.body).toEqual({
      bindingId: 'acme-bot',
      enabled: false,
      changed: true,
      cancelRequested: 0,
      cancelledRunIds: [],
    });
    expect((await call(tok.acme, 'POST', '/v1/bindings/acme-bot/disable')).body).toMatchObject({ changed: false });
    const audit = host.store.audit.records().filter((a) => a.type === 'config.updated');
    expect(audit.at(-1)).toMatchObject({ actor: `api:${tokenId(tok.acme)}/user:bob`, data: { id: 'acme-bot' } });
    const on = await call(tok.acme, 'POST', '/v1/bindings/acme-bot/enable', null);
    expect(on.body).toMatchObject({ enabled: true, changed: true });
    const explain = await call(tok.acme, 'GET', '/v1/bindings/acme-bot/explain');
    expect(explain.status, explain.text).toBe(200);
    expect(explain.body).toMatchObject({
      binding: { id: 'acme-bot', tenant: ACME, enabled: true, runner: 'echo' },
      missingSecrets: [],
    });
    // echo declares no model use: the granted model is withheld, and said so (computed from resolveRunAccess).
    expect(JSON.stringify(explain.body.withheld)).toContain('acme-model');
  });

  it("another tenant's binding answers 404 exactly like a missing one, and nothing happens to it", async () => {
    const strip = (b: Json) => ({ ...b, detail: undefined, instance: undefined, requestId: undefined });
    for (const [method, suffix, body] of [
      ['GET', '', undefined],
      ['GET', '/explain', undefined],
      ['POST', '/enable', {}],
      ['POST', '/disable', { cancelActive: true }],
    ] as const) {
      const theirs = await call(tok.acme, method, `/v1/bindings/beta-bot${suffix}`, body);
      const none = await call(tok.acme, method, `/v1/bindings/beta-box${suffix}`, body);
      expect([suffix, theirs.status, none.status]).toEqual([suffix, 404, 404]);
      expect(strip(theirs.body)).toEqual(strip(none.body));
      expect(theirs.body.detail).toBe('no binding "beta-bot"');
      expect(theirs.text).not.toMatch(/telegram|beta-model|scripted/);
    }
    betaUntouched();
  });

  it('refuses a body it does not know (a misspelt option is not silently a real apply)', async () => {
    const r = await call(tok.acme, 'POST', '/v1/bindings/acme-bot/disable', { cancel_active: true });
    expect(r.status).toBe(400);
    expect(r.body.errors?.[0]?.message).toContain('cancel_active');
    const by = await call(tok.acme, 'POST', '/v1/bindings/acme-bot/disable', { by: 'x y\nactor: root' });
    expect([by.status, by.body.errors?.[0]?.path]).toEqual([400, 'by']);
  });
});

describe('GET /v1/runners', () => {
  it('lists the runners found and the broken ones with their error (as runners list --json)', async () => {
    const r = await call(tok.acme, 'GET', '/v1/runners');
    expect(r.status).toBe(200);
    const body = r.body as unknown as { runners: { id: string; source: string }[]; problems: { file: string }[] };
    expect(body.runners.map((x) => x.id)).toEqual(expect.arrayContaining(['echo', 'waits-for-go']));
    expect(body.problems.some((p) => p.file.includes('broken-manifest'))).toBe(true);
  });
});
