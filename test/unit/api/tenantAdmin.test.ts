// An admin applying configuration through `paddock serve` (any tenant's; the operator's `default` too unless the
// server allows host config): resources (host commands, paths, URLs, secret references) stay as the operator made
// them, and bindings cannot leave the host's isolation (host/bindings/tenantAdmin.ts). Found by an outside attack: an
// `other` tenant admin ran `/bin/sh` as root through an MCP server's command, sent a host secret to its own URL and
// read a host folder.
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APPLY_RATE } from '../../../host/api/routes/adminConfig.js';
import { buildApi } from '../../../host/api/server.js';
import {
  MAX_TENANT_BINDINGS,
  MAX_TENANT_BINDING_BYTES,
  MAX_TENANT_CONFIG_BYTES_PER_DAY,
} from '../../../host/bindings/apply.js';
import { MAX_PROBLEMS } from '../../../host/bindings/validateConfig.js';
import { ConfigRepo } from '../../../host/state/configRepo.js';
import { createApiToken } from '../../../host/state/apiTokens.js';
import { tempHost } from '../../helpers/host.js';

let host: ReturnType<typeof tempHost>;
let app: FastifyInstance;
/** The same host served with `--api-host-config`. */
let hostConfigApp: FastifyInstance;
const tok = { acme: '', beta: '', operator: '' };

type Json = Record<string, unknown> & { errors?: { path: string; message: string }[] };
async function call(token: string, url: string, payload: unknown, server = app) {
  const r = await server.inject({
    method: 'POST',
    url,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
  });
  return { status: r.statusCode, body: r.json() as Json, text: r.body, headers: r.headers };
}
const apply = (token: string, payload: unknown, server = app) => call(token, '/v1/config/apply', payload, server);

/** What the operator made for tenant acme (with `paddock apply` on the host). */
const operatorConfig = {
  resources: {
    models: [{ id: 'acme-model', tenant: 'acme', provider: 'scripted', model: 'scripted-1' }],
    mcpServers: [{ id: 'acme-tools', tenant: 'acme', url: 'http://127.0.0.1:9/mcp' }],
  },
  bindings: [{ id: 'acme-legacy', tenant: 'acme', runner: 'echo', sandbox: 'process', route: { platform: 'legacy' } }],
};

beforeAll(async () => {
  host = tempHost();
  const deps = {
    store: host.store,
    dispatcher: host.dispatcher,
    config: host.config,
    log: pino({ level: 'silent' }),
    stopping: () => false,
    redactor: host.redactor,
  };
  app = await buildApi(deps);
  hostConfigApp = await buildApi({ ...deps, hostConfig: true });
  host.apply(operatorConfig);
  tok.acme = createApiToken(host.store, { tenant: 'acme', role: 'admin', by: 'user:test' }).token;
  tok.operator = createApiToken(host.store, { tenant: 'default', role: 'admin', by: 'user:test' }).token;
  tok.beta = createApiToken(host.store, { tenant: 'beta', role: 'admin', by: 'user:test' }).token;
});
afterAll(() => host.close());

const stored = () =>
  new ConfigRepo(host.store)
    .list()
    .map((o) => `${o.kind}/${o.id}@${o.version}`)
    .sort();

describe("a tenant's own admin", () => {
  it('cannot create or change a resource, of any kind; nothing is written', async () => {
    const before = stored();
    const attempts: [string, unknown][] = [
      ['mcpServers', { id: 'o-mcp', command: '/bin/sh', args: ['-c', 'id > /tmp/pwned'] }],
      ['mcpServers', { id: 'acme-tools', url: 'http://127.0.0.1:9/other' }],
      ['models', { id: 'acme-model', provider: 'scripted', model: 'scripted-2' }],
      [
        'models',
        { id: 'm2', provider: 'openai', model: 'x', baseUrl: 'http://127.0.0.1:9/v1', apiKey: { env: 'HOME' } },
      ],
      ['knowledgeBases', { id: 'kb', path: '/etc' }],
      ['artifacts', { id: 'art', path: '/etc/passwd' }],
    ];
    for (const [plural, item] of attempts) {
      const r = await apply(tok.acme, { config: { resources: { [plural]: [item] } }, dryRun: false });
      expect([plural, r.status], r.text).toEqual([plural, 400]);
      expect(r.body.errors).toContainEqual({
        path: `config.resources.${plural}[0]`,
        message: expect.stringContaining('an admin through the API cannot create or change resources') as string,
      });
    }
    expect(stored()).toEqual(before);
  });

  it('cannot set a binding outside the isolation; every field is named at once', async () => {
    const r = await apply(tok.acme, {
      config: {
        bindings: [
          {
            id: 'acme-open',
            runner: 'echo',
            sandbox: 'process',
            allowDegrade: true,
            readPaths: ['/etc'],
            network: { allowPrivate: true },
            route: { platform: 'open' },
          },
        ],
      },
    });
    expect(r.status, r.text).toBe(400);
    // Listed with the validator's own problems (a read path outside the mount roots is one).
    expect(r.body.errors!.map((e) => e.path)).toEqual(
      expect.arrayContaining([
        'config.bindings[0].allowDegrade',
        'config.bindings[0].network.allowPrivate',
        'config.bindings[0].readPaths',
        'config.bindings[0].sandbox',
      ]),
    );
    expect(new ConfigRepo(host.store).get('binding', 'acme-open')).toBeUndefined();
  });

  it('applies bindings inside the isolation granting the operator’s resources; an export round-trips', async () => {
    const exported = await app.inject({
      method: 'GET',
      url: '/v1/config',
      headers: { authorization: `Bearer ${tok.acme}` },
    });
    const config = exported.json() as { resources: object; bindings: object[] };
    config.bindings.push({
      id: 'acme-bot',
      runner: 'echo',
      route: { platform: 'telegram', bot: 'acme' },
      grants: { models: ['acme-model'] },
    });
    const r = await apply(tok.acme, { config });
    expect(r.status, r.text).toBe(200);
    expect(r.body.changes).toContainEqual({ kind: 'binding', id: 'acme-bot', action: 'created' });
    expect(r.body.changes).toContainEqual({ kind: 'binding', id: 'acme-legacy', action: 'unchanged' });
  });

  it("prune removes the tenant's bindings only: the operator's resources stay", async () => {
    const r = await apply(tok.acme, { config: {}, prune: true });
    expect(r.status, r.text).toBe(200);
    expect(stored().filter((s) => !s.startsWith('binding/'))).toEqual(['mcpServer/acme-tools@1', 'model/acme-model@1']);
    expect(stored().some((s) => s.startsWith('binding/acme'))).toBe(false);
  });

  it('may disable a binding the operator made outside the sandbox, not enable it again', async () => {
    host.apply({ bindings: [operatorConfig.bindings[0]!] }); // made again by the operator (the prune above removed it)
    const disabled = await call(tok.acme, '/v1/bindings/acme-legacy/disable', {});
    expect(disabled.status, disabled.text).toBe(200);
    expect(disabled.body).toMatchObject({ enabled: false, changed: true });
    const enabled = await call(tok.acme, '/v1/bindings/acme-legacy/enable', {});
    expect(enabled.status, enabled.text).toBe(400);
    expect(enabled.body.errors).toEqual([expect.objectContaining({ path: 'bindings[0].sandbox' })]);
    expect(enabled.text).toContain('--api-host-config');
    // The operator (on the host) enables it again.
    host.apply({ bindings: [{ ...operatorConfig.bindings[0]!, enabled: true }] });
  });
});

describe("the operator's own tenant (default) through the API", () => {
  const hostLevel = {
    resources: { mcpServers: [{ id: 'op-tools', command: '/bin/true' }] },
    bindings: [{ id: 'op-bot', runner: 'echo', sandbox: 'process', route: { platform: 'op' } }],
  };

  it('is held like any API admin by default: no resource, no binding outside the sandbox; no write', async () => {
    const before = stored();
    const r = await apply(tok.operator, { config: hostLevel });
    expect(r.status, r.text).toBe(400);
    expect(r.body.errors!.map((e) => e.path).sort()).toEqual([
      'config.bindings[0].sandbox',
      'config.resources.mcpServers[0]',
    ]);
    expect(r.text).toContain('--api-host-config');
    expect(stored()).toEqual(before);
  });

  it('may set host-level fields, like the CLI, on a server started with --api-host-config', async () => {
    const r = await apply(tok.operator, { config: hostLevel, dryRun: true }, hostConfigApp);
    expect(r.status, r.text).toBe(200);
    // Another tenant's admin is still held there.
    const acme = await apply(tok.acme, { config: hostLevel, dryRun: true }, hostConfigApp);
    expect(acme.status, acme.text).toBe(400);
  });
});

describe('a configuration with very many problems', () => {
  it('lists the first problems and says how many more, whatever the size (no pairwise blow-up)', async () => {
    const bindings = Array.from({ length: 3000 }, (_, i) => ({
      id: `same-${i}`,
      runner: 'echo',
      route: { platform: 'same' },
    }));
    // The operator's own apply (a tenant's admin is bound to 1 000 bindings: below).
    const r = await apply(tok.operator, { config: { bindings }, dryRun: true }, hostConfigApp);
    expect(r.status).toBe(400);
    expect(r.body.errors).toHaveLength(MAX_PROBLEMS + 1);
    expect(r.body.errors!.at(-1)!.message).toMatch(/^2799 more problems not listed/);
  });
});

describe('a configuration whose YAML aliases repeat a large value', () => {
  it('is a 413 before anything is stored, dry run or not; the same without aliases is fine', async () => {
    const before = stored();
    const big = 'A'.repeat(900_000);
    const yaml = [
      'bindings:',
      '  - id: amplified',
      '    runner: echo',
      '    route: { platform: amplified }',
      '    config:',
      `      prefix: &s "${big}"`,
      `      more: [${Array.from({ length: 90 }, () => '*s').join(', ')}]`,
    ].join('\n');
    for (const dryRun of [true, false]) {
      const r = await apply(tok.acme, { yaml, dryRun });
      expect(r.status, r.text.slice(0, 300)).toBe(413);
      expect(r.body).toMatchObject({ code: 'payload_too_large', errors: [{ path: 'yaml' }] });
    }
    expect(stored()).toEqual(before);
    const small = yaml.replace(big, 'A').replace('*s]', '*s, *s]');
    expect((await apply(tok.acme, { yaml: small, dryRun: true })).status).not.toBe(413);
  });
});

describe("a tenant's admin and many bindings", () => {
  it('may keep at most 1 000: more is refused at `bindings` before validation; nothing is written', async () => {
    const before = stored();
    const bindings = Array.from({ length: MAX_TENANT_BINDINGS + 1 }, (_, i) => ({
      id: `many-${i}`,
      runner: 'echo',
      route: { platform: 'many', bot: `b${i}` },
    }));
    const started = performance.now();
    // With prune, the file's bindings are all the tenant would keep.
    const r = await apply(tok.acme, { config: { bindings }, prune: true });
    expect(r.status, r.text.slice(0, 300)).toBe(400);
    expect(r.body.errors).toEqual([
      { path: 'config.bindings', message: expect.stringMatching(/at most 1000 bindings; this would leave 1001/) },
    ]);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(stored()).toEqual(before);
    // Exactly the bound is accepted (dry run).
    const atBound = await apply(tok.acme, { config: { bindings: bindings.slice(1) }, prune: true, dryRun: true });
    expect(atBound.status, atBound.text.slice(0, 300)).toBe(200);
  }, 30_000);
});

describe('a configuration nested very deeply', () => {
  it('is a 400 naming where it came in, as JSON and as YAML; the server goes on', { timeout: 120_000 }, async () => {
    // Sent as text: the test's own JSON.stringify could not write it either.
    const deep = `${'{"a":'.repeat(100_000)}"x"${'}'.repeat(100_000)}`;
    const json = await apply(
      tok.acme,
      `{"config":{"bindings":[{"id":"deep","runner":"echo","route":{"platform":"deep"},"config":${deep}}]}}`,
    );
    expect(json.status, json.text.slice(0, 300)).toBe(400);
    expect(json.body).toMatchObject({ code: 'invalid_request', errors: [{ path: 'config' }] });
    // YAML is read in a child process: a line of 500 000 `- ` made the host abort out of memory, and texts shaped
    // against a one-pass pre-check kept a parser busy for seconds. Each is a 400 within the reader's 5 s.
    const B = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
    const chain = [
      'a0: &a0 [x]',
      ...[0, 1, 2, 3, 4].map((i) => `a${i + 1}: &a${i + 1} ${'['.repeat(60)}*a${i}${']'.repeat(60)}`),
    ];
    const shapes: Record<string, string> = {
      'flow brackets': B(100_000),
      'compact sequences': `bindings:\n  - ${'- '.repeat(500_000)}x`,
      indentation: Array.from({ length: 1400 }, (_, i) => `${' '.repeat(i)}a:`).join('\n'),
      'a no-break space before #': `\u00a0#x: ${'['.repeat(1_000_000)}`,
      'a block scalar in a compact map': `- b: |\n    x\n  c: ${B(100_000)}`,
      'a quote in a plain scalar': `a: b\n  "c\nd: ${B(100)}`,
      'indentless sequences': Array.from({ length: 63 }, (_, i) => `${' '.repeat(2 * i)}- k:`).join('\n'),
      'a document marker': `--- ${B(100)}`,
      'an anchor before brackets': `[&a${B(100)}]`,
      'chained aliases': chain.join('\n'),
      'a cycle': '&a [*a]',
    };
    const healthz = async () => expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    for (const [name, text] of Object.entries(shapes)) {
      const started = performance.now();
      let answered = false;
      const pending = apply(tok.acme, { yaml: text }).then((r) => ((answered = true), r));
      // The server answers meanwhile: the reading is not on its event loop (a parse in the host would block this
      // /healthz until it ended, and the apply would be answered first).
      await healthz();
      expect(answered, name).toBe(false);
      const yaml = await pending;
      expect(yaml.status, `${name}: ${yaml.text.slice(0, 300)}`).toBe(400);
      expect(yaml.body, name).toMatchObject({ code: 'invalid_request', errors: [{ path: 'yaml' }] });
      // Deep, invalid, too slow, or the reader itself died (it aborts out of memory on some): never the server.
      expect(yaml.body.errors![0]!.message, name).toMatch(
        /^(nests deeper than 64 levels|.*not valid YAML|the YAML text (took longer|could not be read))/,
      );
      expect(performance.now() - started, name).toBeLessThan(15_000);
    }
    expect((await apply(tok.acme, { config: {}, dryRun: true })).status).toBe(200);
    // A syntax error is named once, at the field (not "yaml: yaml …").
    const broken = await apply(tok.acme, { yaml: 'bindings: [\n' });
    expect(broken.body.errors).toEqual([
      { path: 'yaml', message: expect.stringMatching(/^\(line \d+\): not valid YAML/) as string },
    ]);
  });
});

describe('YAML texts read at once', () => {
  it('at most 2 readers run, 1 per tenant; another apply meanwhile is 429 server_busy with Retry-After', async () => {
    // Two slow texts of two tenants (each takes its reader seconds), then more while they run.
    const slow = `\u00a0#x: ${'['.repeat(1_000_000)}`;
    const busy = async (token: string) => {
      const r = await app.inject({
        method: 'POST',
        url: '/v1/config/apply',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        payload: JSON.stringify({ yaml: 'bindings: []', dryRun: true }),
      });
      expect(r.statusCode, r.body).toBe(429);
      expect(r.json()).toMatchObject({ code: 'server_busy' });
      expect(r.headers['retry-after']).toBe('1');
      return (r.json() as { detail: string }).detail;
    };
    const acmeSlow = apply(tok.acme, { yaml: slow });
    // One tenant holds one reader: its second text waits for it, the other reader stays free for another tenant.
    expect(await busy(tok.acme)).toMatch(/a YAML text of this tenant is being read already/);
    const betaSlow = apply(tok.beta, { yaml: slow });
    expect(await busy(tok.operator)).toMatch(/2 YAML texts are being read already/);
    for (const r of await Promise.all([acmeSlow, betaSlow])) expect(r.status).toBe(400);
    // Free again.
    expect((await apply(tok.acme, { yaml: 'bindings: []', dryRun: true })).status).toBe(200);
  }, 60_000);
});

describe('the size of what a tenant stores', () => {
  it('the 1 MiB bound of an apply counts UTF-8 bytes as stored: wide characters, YAML 1.1 dates: 413', async () => {
    const before = stored();
    const wide = [
      'bindings:',
      '  - id: wide',
      '    runner: acp',
      '    route: { platform: wide }',
      `    config: { command: agent, args: [&a "${'漢'.repeat(230_000)}", *a, *a] }`,
    ].join('\n');
    const dates = [
      '%YAML 1.1',
      '---',
      'bindings:',
      '  - id: dates',
      '    runner: acp',
      '    route: { platform: dates }',
      `    config: { command: agent, args: [${Array.from({ length: 75_000 }, () => '2001-1-1').join(', ')}] }`,
    ].join('\n');
    for (const yaml of [wide, dates]) {
      const r = await apply(tok.acme, { yaml, dryRun: true });
      expect(r.status, r.text.slice(0, 300)).toBe(413);
      expect(r.body).toMatchObject({ code: 'payload_too_large', errors: [{ path: 'yaml' }] });
    }
    expect(stored()).toEqual(before);
  }, 30_000);

  it("a tenant's bindings are bounded in all (4 MiB as stored): past it, refused at `bindings`", async () => {
    const before = stored();
    const binding = (i: number) => ({
      id: `heavy-${i}`,
      runner: 'acp',
      route: { platform: 'heavy', bot: `b${i}` },
      config: { command: 'agent', args: ['x'.repeat(900_000)] },
    });
    const perApply = Math.floor(MAX_TENANT_BINDING_BYTES / 900_000); // 4 fit, the 5th does not
    for (let i = 0; i < perApply; i++) {
      const r = await apply(tok.beta, { config: { bindings: [binding(i)] } });
      expect(r.status, r.text.slice(0, 300)).toBe(200);
    }
    const over = await apply(tok.beta, { config: { bindings: [binding(perApply)] } });
    expect(over.status, over.text.slice(0, 300)).toBe(400);
    expect(over.body.errors).toEqual([
      { path: 'config.bindings', message: expect.stringMatching(/at most 4194304 bytes in all as stored/) },
    ]);
    expect(stored().filter((k) => k.startsWith('binding/heavy-'))).toHaveLength(perApply);
    // Room again after a prune.
    expect((await apply(tok.beta, { config: { bindings: [] }, prune: true })).status).toBe(200);
    expect(stored()).toEqual(before);
  }, 60_000);

  it('what a tenant writes a day is budgeted: past it, 429 quota_exceeded until the next UTC day', async () => {
    const repo = new ConfigRepo(host.store);
    const day = new Date().toISOString().slice(0, 10);
    const writtenBefore = repo.writtenOn('acme', day);
    const one = { id: 'budget', runner: 'echo', route: { platform: 'budget' } };
    expect((await apply(tok.acme, { config: { bindings: [one] } })).status).toBe(200);
    const counted = repo.writtenOn('acme', day) - writtenBefore;
    expect(counted).toBeGreaterThan(256); // the spec and its change row
    expect((await apply(tok.acme, { config: { bindings: [one] } })).status).toBe(200);
    expect(repo.writtenOn('acme', day) - writtenBefore).toBe(counted); // unchanged: nothing written, nothing counted
    // Bring the tenant to its budget (as a day of applies would), then one more change.
    repo.countWritten('acme', day, MAX_TENANT_CONFIG_BYTES_PER_DAY - repo.writtenOn('acme', day));
    const before = stored();
    const r = await apply(tok.acme, { config: { bindings: [{ ...one, route: { platform: 'budget2' } }] } });
    expect(r.status, r.text.slice(0, 300)).toBe(429);
    expect(r.body).toMatchObject({ code: 'quota_exceeded', reason: 'config_write_quota' });
    expect(Number(r.headers?.['retry-after'] ?? 0)).toBeGreaterThan(0);
    expect(stored()).toEqual(before);
    expect(repo.writtenOn('acme', day)).toBe(MAX_TENANT_CONFIG_BYTES_PER_DAY);
    // A dry run still answers; another tenant is not touched.
    expect((await apply(tok.acme, { config: { bindings: [one] }, dryRun: true })).status).toBe(200);
    expect(repo.writtenOn('beta', day)).toBeLessThan(MAX_TENANT_CONFIG_BYTES_PER_DAY);
  });
});

describe('how often a tenant applies', () => {
  it('is bounded per tenant (all its tokens together): past the burst, 429 rate_limited; others not', async () => {
    const tokens = [1, 2, 3].map(
      () => createApiToken(host.store, { tenant: 'gamma', role: 'admin', by: 'user:test' }).token,
    );
    // 60 dry runs at once from three tokens of one tenant (each token's own rate would allow them all).
    const answers = await Promise.all(
      Array.from({ length: 60 }, (_, i) => apply(tokens[i % 3]!, { config: { bindings: [] }, dryRun: true })),
    );
    const limited = answers.filter((a) => a.status === 429);
    expect(answers.filter((a) => a.status === 200).length).toBeGreaterThanOrEqual(APPLY_RATE.burst);
    expect(limited.length).toBeGreaterThan(0);
    expect(limited[0]!.body).toMatchObject({ code: 'rate_limited', scope: 'tenant' });
    expect(Number(limited[0]!.headers['retry-after'])).toBeGreaterThan(0);
    // Another tenant applies as before.
    expect((await apply(tok.beta, { config: { bindings: [] }, dryRun: true })).status).toBe(200);
  });
});
