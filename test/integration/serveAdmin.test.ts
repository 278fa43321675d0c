// `paddock serve`'s configuration admin endpoints end to end: the real command as a child process on a private data
// folder, real tokens made with `paddock tokens create`, two tenants (acme through the API, beta applied by the
// operator with `paddock apply`), real runner processes held by the server and by a `paddock dispatch` child, and a
// canary secret the server's environment holds, grepped for in every answer, its log and the data folder.
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { filesContaining } from '../helpers/canary.js';
import { jsonLines, paddock } from '../helpers/cli.js';
import { chatEvent, FIXTURE_RUNNERS } from '../helpers/host.js';
import { rendezvous } from '../helpers/rendezvous.js';
import { startServe, type ServeChild } from '../helpers/serve.js';

// Not named like a credential: the server learns it is a secret from the configuration that references it.
const CANARY_ENV = 'PADDOCK_TEST_SERVE_ADMIN_CANARY';
const CANARY = `canary-serve-admin-${process.pid}-Vb8Kp2`;
const env = { PADDOCK_RUNNER_DIRS: FIXTURE_RUNNERS };

type Body = Record<string, unknown> & { code?: string; errors?: { path: string; message: string }[] };
const answers: string[] = [];

async function call(base: string, method: string, path: string, token: string, body?: unknown) {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${base}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  answers.push(text, JSON.stringify([...res.headers]));
  const json = res.headers.get('content-type')?.includes('json') && text ? (JSON.parse(text) as Body) : ({} as Body);
  return { status: res.status, body: json, text };
}

async function token(home: string, tenant: string, role: string): Promise<string> {
  const r = await paddock(['tokens', 'create', '--tenant', tenant, '--role', role], { dataDir: home });
  expect(r.exitCode, r.stderr).toBe(0);
  return r.stdout.trim();
}
const tokenId = (t: string) => t.split('_')[1]!;

const home = mkdtempSync(join(tmpdir(), 'paddock-serve-admin-'));
const rv = rendezvous(home);
let server: ServeChild;
/** Tenant "acme" of these tests is the operator's tenant, whose admin may set host-level fields; a tenant's own admin
 * may not (test/unit/api/tenantAdmin.test.ts). */
const ACME = 'default';
const tok = { acme: '', acmePlatform: '', acmeApprover: '', beta: '', betaPlatform: '' };

const held = (tenant: string, id: string, bot: string) => ({
  id,
  tenant,
  runner: 'waits-for-go',
  sandbox: 'process',
  config: { socket: rv.path },
  route: { platform: 'telegram', bot },
});

/** The operator's configuration of tenant beta, applied with the CLI before the server starts. */
const betaYaml = () =>
  [
    'resources:',
    '  models:',
    '    - { id: beta-model, tenant: beta, provider: scripted, model: beta-scripted }',
    'bindings:',
    `  - ${JSON.stringify(held('beta', 'beta-bot', 'beta'))}`,
  ].join('\n');

beforeAll(async () => {
  writeFileSync(join(home, 'beta.yaml'), `${betaYaml()}\n`);
  const applied = await paddock(['apply', '-f', join(home, 'beta.yaml')], { dataDir: home, env });
  expect(applied.exitCode, applied.stderr).toBe(0);
  tok.acme = await token(home, ACME, 'admin');
  tok.acmePlatform = await token(home, ACME, 'platform');
  tok.acmeApprover = await token(home, ACME, 'approver');
  tok.beta = await token(home, 'beta', 'admin');
  tok.betaPlatform = await token(home, 'beta', 'platform');
  // --api-host-config: the operator's tenant (ACME here) may make resources through the API, as the CLI does.
  server = await startServe(home, ['--rate', '1000', '--burst', '1000', '--api-host-config'], {
    ...env,
    PADDOCK_LOG_LEVEL: 'info',
    [CANARY_ENV]: CANARY,
  });
}, 120_000);

afterAll(async () => {
  expect(await server.stop()).toBe(0);
  rv.close();
  // The canary never left the server: no answer, header or log line holds it, and no stored byte.
  expect(answers.filter((a) => a.includes(CANARY))).toEqual([]);
  expect(server.stderr()).not.toContain(CANARY);
  // Every file of the data folder but the session disk images (1 GiB each, sparse): those hold only what the echo
  // and waits-for-go runners wrote, and no runner here is given the key.
  const forms = [CANARY, Buffer.from(CANARY).toString('base64')];
  const leaks = readdirSync(home)
    .filter((name) => name !== 'quota')
    .flatMap((name) => {
      const path = join(home, name);
      if (statSync(path).isDirectory()) return filesContaining(path, CANARY).map((file) => `${name}/${file}`);
      const bytes = readFileSync(path);
      return forms.some((f) => bytes.includes(f)) ? [name] : [];
    });
  expect(leaks).toEqual([]);
  const verified = await paddock(['audit', 'verify'], { dataDir: home });
  expect(verified.exitCode, verified.stdout + verified.stderr).toBe(0);
}, 60_000);

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
    held(ACME, 'acme-held', 'acme-held'),
  ],
});

/** A run's status once it has ended: a bounded poll on its real status. */
async function endOf(runId: string, t: string): Promise<string> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const status = (await call(server.url, 'GET', `/v1/runs/${runId}`, t)).body.status as string;
    if ((status !== 'running' && status !== 'queued') || Date.now() > deadline) return status;
    await new Promise((r) => setTimeout(r, 50)); // the poll interval, not a wait for an outcome
  }
}

async function betaUntouched() {
  const shown = await paddock(['export', '--json'], { dataDir: home, env });
  const all = JSON.parse(shown.stdout) as { bindings: { id: string; tenant: string; enabled: boolean }[] };
  expect(all.bindings.filter((b) => b.tenant === 'beta')).toEqual([
    expect.objectContaining({ id: 'beta-bot', enabled: true }),
  ]);
  const history = await paddock(['bindings', 'show', 'beta-bot', '--json'], { dataDir: home, env });
  expect((JSON.parse(history.stdout) as { version: number }).version).toBe(1);
}

describe('paddock serve: configuration admin endpoints', () => {
  it('non-admin tokens get 403 naming the role needed, on every endpoint of this lane', async () => {
    const routes: [string, string, unknown?][] = [
      ['GET', '/v1/runners'],
      ['GET', '/v1/config'],
      ['GET', '/v1/resources'],
      ['GET', '/v1/bindings'],
      ['POST', '/v1/config/apply', { config: acmeConfig() }],
      ['GET', '/v1/bindings/acme-bot'],
      ['POST', '/v1/bindings/acme-bot/enable', {}],
      ['POST', '/v1/bindings/acme-bot/disable', { cancelActive: true }],
      ['GET', '/v1/bindings/acme-bot/explain'],
    ];
    for (const [method, path, body] of routes)
      for (const t of [tok.acmePlatform, tok.acmeApprover]) {
        const r = await call(server.url, method, path, t, body);
        expect([path, r.status, r.body.code]).toEqual([path, 403, 'forbidden']);
        // A read is also a viewer's; a change is the admin's alone.
        expect(r.body.requiredRole).toEqual(method === 'GET' ? ['admin', 'viewer'] : ['admin']);
      }
    const exported = await paddock(['export', '--json'], { dataDir: home, env });
    expect(exported.stdout).not.toContain('acme');
  });

  it('apply: a dry run changes nothing; then one audited transaction as the token; prune is per tenant', async () => {
    const dry = await call(server.url, 'POST', '/v1/config/apply', tok.acme, { config: acmeConfig(), dryRun: true });
    expect(dry.status, dry.text).toBe(200);
    expect(dry.body).toMatchObject({
      dryRun: true,
      changes: [
        { kind: 'model', id: 'acme-model', action: 'created' },
        { kind: 'binding', id: 'acme-bot', action: 'created' },
        { kind: 'binding', id: 'acme-held', action: 'created' },
      ],
    });
    expect((await call(server.url, 'GET', '/v1/config', tok.acme)).body).toMatchObject({ bindings: [] });

    const yaml = (await import('yaml')).stringify(acmeConfig());
    const real = await call(server.url, 'POST', '/v1/config/apply', tok.acme, { yaml, by: 'carol' });
    expect(real.status, real.text).toBe(200);
    expect(real.body).toMatchObject({ dryRun: false, missingSecrets: [] });
    const actor = `api:${tokenId(tok.acme)}/user:carol`;
    const audit = jsonLines((await paddock(['audit', 'export'], { dataDir: home })).stdout) as unknown as {
      type: string;
      actor: string;
      data: { id: string; spec: { tenant: string } };
    }[];
    const created = audit.filter((a) => a.type === 'config.created' && a.actor === actor);
    expect(created.map((a) => [a.data.id, a.data.spec.tenant])).toEqual([
      ['acme-model', ACME],
      ['acme-bot', ACME],
      ['acme-held', ACME],
    ]);

    // Prune with acme's own file minus one binding: only that binding goes; beta's objects stay.
    const fewer = { ...acmeConfig(), bindings: acmeConfig().bindings.slice(0, 1) };
    const pruneDry = await call(server.url, 'POST', '/v1/config/apply', tok.acme, {
      config: fewer,
      prune: true,
      dryRun: true,
    });
    expect(pruneDry.body.changes).toEqual(
      expect.arrayContaining([{ kind: 'binding', id: 'acme-held', action: 'deleted' }]),
    );
    expect(JSON.stringify(pruneDry.body)).not.toContain('beta');
    const pruned = await call(server.url, 'POST', '/v1/config/apply', tok.acme, { config: fewer, prune: true });
    expect((pruned.body.changes as { action: string }[]).filter((c) => c.action === 'deleted')).toEqual([
      { kind: 'binding', id: 'acme-held', action: 'deleted' },
    ]);
    await betaUntouched();
    // Put it back for the tests below.
    expect((await call(server.url, 'POST', '/v1/config/apply', tok.acme, { config: acmeConfig() })).status).toBe(200);
  });

  it("cross-tenant: an object into beta or onto beta's ids is refused at its field; beta's binding: 404", async () => {
    const intrude = await call(server.url, 'POST', '/v1/config/apply', tok.acme, {
      config: {
        resources: { models: [{ id: 'beta-model', provider: 'scripted', model: 'hijacked' }] },
        bindings: [held('beta', 'beta-extra', 'beta-extra'), { ...held(ACME, 'beta-bot', 'x'), tenant: undefined }],
      },
      prune: true,
    });
    expect(intrude.status).toBe(400);
    expect(intrude.body.errors?.map((e) => e.path)).toEqual([
      'config.resources.models[0].id',
      'config.bindings[0].tenant',
      'config.bindings[1].id',
    ]);
    expect(intrude.text).not.toContain('beta-scripted');

    const strip = (b: Body) => ({ ...b, detail: undefined, instance: undefined, requestId: undefined });
    for (const [method, suffix, body] of [
      ['GET', '', undefined],
      ['GET', '/explain', undefined],
      ['POST', '/enable', {}],
      ['POST', '/disable', { cancelActive: true }],
    ] as const) {
      const theirs = await call(server.url, method, `/v1/bindings/beta-bot${suffix}`, tok.acme, body);
      const none = await call(server.url, method, `/v1/bindings/beta-box${suffix}`, tok.acme, body);
      expect([suffix, theirs.status, none.status]).toEqual([suffix, 404, 404]);
      expect(strip(theirs.body)).toEqual(strip(none.body));
      expect(theirs.text).not.toMatch(/telegram|waits-for-go|beta-model/);
    }
    // Beta's admin sees its own binding; acme's lists never mention beta.
    expect((await call(server.url, 'GET', '/v1/bindings/beta-bot', tok.beta)).status).toBe(200);
    for (const path of ['/v1/bindings', '/v1/resources', '/v1/config', '/v1/config?format=yaml'])
      expect((await call(server.url, 'GET', path, tok.acme)).text).not.toContain('beta');
    await betaUntouched();
  });

  it('disable with cancelActive cancels the running runs of the binding, held by the server or by a CLI', async () => {
    // A run the server holds (dispatched over HTTP) and one a `paddock dispatch` process holds.
    const event = (conversation: string) => chatEvent({ bot: 'acme-held', conversation: { id: conversation } });
    const mine = await call(server.url, 'POST', '/v1/events', tok.acmePlatform, event('c-server'));
    expect(mine.status, mine.text).toBe(202);
    const cli = paddock(['dispatch', '-f', '-', '--json', '--tenant', ACME], {
      dataDir: home,
      env,
      input: JSON.stringify(event('c-cli')),
    });
    const cliRunId = await new Promise<string>((resolve) => {
      let text = '';
      cli.stdout!.on('data', (chunk: Buffer) => {
        text += chunk.toString();
        const m = /\b(run_[\w-]+)/.exec(text);
        if (m) resolve(m[1]!);
      });
    });
    const serverRunId = mine.body.runId as string;
    await rv.arrived(serverRunId);
    await rv.arrived(cliRunId);
    // Beta's run of a binding with the same runner keeps running.
    const theirs = await call(
      server.url,
      'POST',
      '/v1/events',
      tok.betaPlatform,
      chatEvent({ bot: 'beta', conversation: { id: 'b' } }),
    );
    await rv.arrived(theirs.body.runId as string);

    const off = await call(server.url, 'POST', '/v1/bindings/acme-held/disable', tok.acme, {
      cancelActive: true,
      by: 'dave',
    });
    expect(off.status, off.text).toBe(200);
    expect(off.body).toMatchObject({ bindingId: 'acme-held', enabled: false, changed: true, cancelRequested: 2 });
    expect([...(off.body.cancelledRunIds as string[])].sort()).toEqual([serverRunId, cliRunId].sort());

    const cliDone = await cli;
    expect(cliDone.exitCode).toBe(130);
    expect(jsonLines(cliDone.stdout).find((l) => l.type === 'outcome')!.outcome).toMatchObject({
      status: 'cancelled',
    });
    for (const runId of [serverRunId, cliRunId]) {
      expect([runId, await endOf(runId, tok.acmePlatform)]).toEqual([runId, 'cancelled']);
    }
    expect(
      (await call(server.url, 'GET', `/v1/runs/${theirs.body.runId as string}`, tok.betaPlatform)).body.status,
    ).toBe('running');
    const audit = jsonLines((await paddock(['audit', 'export'], { dataDir: home })).stdout) as unknown as {
      type: string;
      actor: string;
      runId?: string;
    }[];
    const actor = `api:${tokenId(tok.acme)}/user:dave`;
    expect(
      audit
        .filter((a) => a.type === 'run.cancel_requested' && a.actor === actor)
        .map((a) => a.runId)
        .sort(),
    ).toEqual([serverRunId, cliRunId].sort());
    rv.go(theirs.body.runId as string);
    expect(await endOf(theirs.body.runId as string, tok.betaPlatform)).toBe('completed');
    // Disabled: a new event of that route is refused.
    const refused = await call(server.url, 'POST', '/v1/events', tok.acmePlatform, event('c-after'));
    expect([refused.status, refused.body.code]).toEqual([422, 'binding_disabled']);
    const on = await call(server.url, 'POST', '/v1/bindings/acme-held/enable', tok.acme, {});
    expect(on.body).toMatchObject({ enabled: true, changed: true, cancelRequested: 0 });
  }, 120_000);

  it("with --api-host-config the operator's admin may make resources and bindings outside the sandbox", async () => {
    const r = await call(server.url, 'POST', '/v1/config/apply', tok.acme, {
      dryRun: true,
      config: {
        resources: { mcpServers: [{ id: 'op-tools', command: '/bin/true' }] },
        bindings: [{ id: 'op-bot', runner: 'echo', sandbox: 'process', route: { platform: 'op-host' } }],
      },
    });
    expect(r.status, r.text).toBe(200);
    // beta's admin is still held on this server.
    const beta = await call(server.url, 'POST', '/v1/config/apply', tok.beta, {
      dryRun: true,
      config: { resources: { mcpServers: [{ id: 'beta-tools', command: '/bin/true' }] } },
    });
    expect(beta.status, beta.text).toBe(400);
  });

  it('a malformed configuration is 400 naming every bad field at once; nothing is stored', async () => {
    const r = await call(server.url, 'POST', '/v1/config/apply', tok.acme, {
      yaml: [
        'resources:',
        '  models:',
        '    - { id: m2, provider: nope, model: x, apiKey: { env: "not a name" } }',
        'bindings:',
        '  - { id: b2, runner: ecoh, route: { platform: telegram }, grants: { models: [m3] } }',
        '  - { id: b3, runner: echo, sandbox: process, route: { platform: telegram, bot: acme }, steering: nope }',
      ].join('\n'),
    });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('invalid_request');
    const paths = r.body.errors!.map((e) => e.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        'resources.models[0].provider',
        'resources.models[0].apiKey.env',
        'bindings[0].runner',
        'bindings[0].grants.models[0]',
        'bindings[1].steering',
      ]),
    );
    expect(r.body.errors!.find((e) => e.path === 'bindings[0].runner')?.message).toContain('did you mean "echo"');
    const config = await call(server.url, 'GET', '/v1/config', tok.acme);
    expect(config.text).not.toMatch(/"b2"|"b3"|"m2"/);
    // The key's value written into a configuration (the server knows it from acme-model's reference): refused at
    // its field, in JSON and in YAML, and never echoed (afterAll greps every answer and the server's log).
    const inline = await call(server.url, 'POST', '/v1/config/apply', tok.acme, {
      config: {
        bindings: [
          { ...acmeConfig().bindings[0], id: 'leaky', route: { platform: 'x' }, description: `see ${CANARY}` },
        ],
      },
    });
    expect([inline.status, inline.body.errors?.map((e) => e.path)]).toEqual([400, ['config.bindings[0].description']]);
    const inYaml = await call(server.url, 'POST', '/v1/config/apply', tok.acme, {
      yaml: [
        'bindings:',
        '  - id: leaky',
        '    runner: echo',
        '    route: { platform: x }',
        `    config: { note: "${CANARY}" }`,
      ].join('\n'),
    });
    expect(inYaml.status).toBe(400);
    expect(inYaml.body.errors?.map((e) => e.path)).toContain('bindings[0].config.note');
  });

  it('explain answers what the CLI computes; runners lists the fixtures and the broken one', async () => {
    const api = await call(server.url, 'GET', '/v1/bindings/acme-bot/explain', tok.acme);
    expect(api.status, api.text).toBe(200);
    // The CLI on the server's environment (the key's variable set): the same computation, the same answer.
    const cli = await paddock(['explain', 'acme-bot', '--json'], {
      dataDir: home,
      env: { ...env, [CANARY_ENV]: CANARY },
    });
    expect(cli.exitCode, cli.stderr).toBe(0);
    expect(api.body).toEqual(JSON.parse(cli.stdout));
    const runners = await call(server.url, 'GET', '/v1/runners', tok.acme);
    const listed = await paddock(['runners', 'list', '--json'], { dataDir: home, env });
    // The CLI also lists the installed package versions with the bindings of every tenant that use them: an
    // operator's view the API does not give a tenant's token.
    const { packages, ...catalog } = JSON.parse(listed.stdout) as { packages: unknown[] };
    expect(runners.body).toEqual(catalog);
    expect(packages).toEqual([]);
    expect((runners.body.problems as unknown[]).length).toBeGreaterThan(0);
  });
});
