// GET /v1/spend and GET /v1/skills (docs/http-api.md "Console endpoints") on a real `paddock serve` child over a real
// data folder, configured by the real `paddock apply`. Spend comes from real gateway calls (the calls-gateway runner
// calling the scripted model through the host): binding `gw` serves tenant acme, then is moved to tenant beta (a
// binding id reused across tenants) and serves beta; each tenant's figures are its own sessions' calls only, equal to
// the sums of the store's gateway_calls rows of that tenant, with the binding's day budgets. Reservations (calls in
// flight) are not caught mid-call here: test/unit/state/spend.test.ts covers them through the store's own functions.
// Skills: a run of a binding granted a skill whose file changed after apply sets `changed` (digest, time, run id);
// applying it again clears it; another tenant never sees it. Platform and approver tokens are refused both reads.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSkill } from '../../host/bindings/skillDigest.js';
import { paddock } from '../helpers/cli.js';
import { chatEvent, FIXTURE_RUNNERS } from '../helpers/host.js';
import { startServe, type ServeChild } from '../helpers/serve.js';

const env = { PADDOCK_RUNNER_DIRS: FIXTURE_RUNNERS };
const home = mkdtempSync(join(tmpdir(), 'paddock-serve-spend-'));
const skillDir = join(home, 'style-skill');
let server: ServeChild;
const tok = { adminA: '', viewerA: '', platformA: '', approverA: '', viewerB: '', platformB: '' };

type Json = Record<string, unknown>;
async function call(path: string, token: string, init: { method?: string; body?: unknown } = {}) {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${server.url}${path}`, {
    method: init.method ?? 'GET',
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  return {
    status: res.status,
    body: (text && /json/.test(res.headers.get('content-type') ?? '') ? JSON.parse(text) : {}) as Json,
    text,
  };
}

async function cliToken(tenant: string, role: string): Promise<string> {
  const r = await paddock(['tokens', 'create', '--tenant', tenant, '--role', role], { dataDir: home });
  expect(r.exitCode, r.stderr).toBe(0);
  return r.stdout.trim();
}

/** `paddock apply` of this YAML (the operator's, so it may move binding gw to another tenant). */
async function apply(lines: string[]): Promise<void> {
  const file = join(home, 'paddock.yaml');
  writeFileSync(file, `${lines.join('\n')}\n`);
  const r = await paddock(['apply', '-f', file], { dataDir: home, env });
  expect(r.exitCode, r.stderr).toBe(0);
}

/** The resources of both tenants, and binding gw of `gwTenant` calling that tenant's model `calls` times. */
function config(gwTenant: 'acme' | 'beta', calls: number): string[] {
  const steps = Array.from({ length: calls }, (_, i) => `{ do: complete, model: sm-${gwTenant}, text: "SAY:n${i}" }`);
  return [
    'resources:',
    '  models:',
    '    - { id: sm-acme, tenant: acme, provider: scripted, model: s1,',
    '        pricing: { inputPerMTokUsd: 3, outputPerMTokUsd: 15 } }',
    '    - { id: sm-beta, tenant: beta, provider: scripted, model: s1,',
    '        pricing: { inputPerMTokUsd: 1, outputPerMTokUsd: 2 } }',
    '  skills:',
    `    - { id: style, tenant: acme, name: style, path: ${JSON.stringify(skillDir)} }`,
    'bindings:',
    `  - id: gw`,
    `    tenant: ${gwTenant}`,
    '    runner: calls-gateway',
    '    sandbox: process',
    '    route: { platform: telegram, bot: gw }',
    `    grants: { models: [sm-${gwTenant}] }`,
    `    limits: { modelTokensPerDay: ${gwTenant === 'acme' ? 100000 : 50000}, modelCostPerDayUsd: 5 }`,
    `    config: { steps: [${steps.join(', ')}] }`,
    '  - { id: skilled, tenant: acme, runner: calls-gateway, sandbox: process, route: { platform: telegram, bot: sk },',
    '      grants: { skills: [style] } }',
  ];
}

/** Dispatch a chat message to `bot` with a platform token and wait for its run to end; answers the run id. */
async function runOnce(platform: string, bot: string): Promise<string> {
  const r = await call('/v1/events', platform, { method: 'POST', body: chatEvent({ bot, conversation: { id: bot } }) });
  expect(r.status, r.text).toBe(202);
  const runId = r.body.runId as string;
  // The run stream ends with the run: it has ended when this returns.
  expect((await call(`/v1/runs/${runId}/events`, platform)).text).toContain('run.ended');
  return runId;
}

/** The store's own sums of `tenant`'s calls in the last 24 h, per model and binding (read-only, independent SQL). */
function storeSums(tenant: string) {
  const db = new Database(join(home, 'paddock.db'), { readonly: true });
  try {
    const since = Date.now() - 86_400_000;
    const q = (by: string) =>
      db
        .prepare(
          `SELECT ${by} AS id, count(*) AS calls, sum(input_tokens) AS input, sum(output_tokens) AS output, ` +
            'sum(cost_usd) AS cost FROM gateway_calls WHERE at_ms > ? AND session_id IN ' +
            `(SELECT id FROM sessions WHERE tenant = ?) GROUP BY ${by} ORDER BY ${by}`,
        )
        .all(since, tenant) as { id: string; calls: number; input: number; output: number; cost: number }[];
    return { models: q('model_id'), bindings: q('binding_id') };
  } finally {
    db.close();
  }
}

beforeAll(async () => {
  mkdirSync(skillDir);
  writeFileSync(join(skillDir, 'SKILL.md'), '---\nname: style\nversion: 1.0.0\n---\nWrite plainly.\n');
  await apply(config('acme', 3));
  tok.adminA = await cliToken('acme', 'admin');
  tok.viewerA = await cliToken('acme', 'viewer');
  tok.platformA = await cliToken('acme', 'platform');
  tok.approverA = await cliToken('acme', 'approver');
  tok.viewerB = await cliToken('beta', 'viewer');
  tok.platformB = await cliToken('beta', 'platform');
  server = await startServe(home, ['--rate', '1000', '--burst', '1000'], env);
  await runOnce(tok.platformA, 'gw');
  // Binding id gw now serves tenant beta: its acme calls stay acme's.
  await apply(config('beta', 2));
  await runOnce(tok.platformB, 'gw');
}, 120_000);

afterAll(async () => {
  if (!server) return; // the set-up failed: its own error says why
  const code = await server.stop();
  expect(code, server.stderr().slice(-4000)).toBe(0);
}, 60_000);

describe('GET /v1/spend', () => {
  it("answers each tenant's own calls under a reused binding id, equal to the store's sums, with budgets", async () => {
    const acme = await call('/v1/spend', tok.viewerA);
    expect(acme.status, acme.text).toBe(200);
    const sums = storeSums('acme');
    expect(sums.models).toMatchObject([{ id: 'sm-acme', calls: 3 }]);
    expect(acme.body.tenant).toBe('acme');
    expect(Date.parse(acme.body.at as string) - Date.parse(acme.body.since as string)).toBe(86_400_000);
    expect(acme.body.models).toEqual(
      sums.models.map((m) => ({
        model: m.id,
        calls: m.calls,
        failedCalls: 0,
        inputTokens: m.input,
        outputTokens: m.output,
        costUsd: m.cost,
      })),
    );
    const [m] = sums.models;
    expect(m!.input).toBeGreaterThan(0);
    expect(m!.cost).toBeCloseTo((m!.input * 3 + m!.output * 15) / 1e6, 12);
    // gw is beta's now: acme's calls under it remain acme's, without a budget (no stored binding of acme).
    expect(acme.body.bindings).toEqual([
      {
        binding: 'gw',
        stored: false,
        calls: 3,
        tokens: m!.input + m!.output,
        costUsd: m!.cost,
        reserved: { calls: 0, tokens: 0, costUsd: 0 },
        budget: { tokensPerDay: null, costPerDayUsd: null },
      },
      expect.objectContaining({ binding: 'skilled', stored: true, calls: 0, tokens: 0 }),
    ]);

    const beta = await call('/v1/spend', tok.viewerB);
    expect(beta.status, beta.text).toBe(200);
    const b = storeSums('beta').bindings;
    expect(b).toMatchObject([{ id: 'gw', calls: 2 }]);
    expect(beta.body.models).toMatchObject([{ model: 'sm-beta', calls: 2, inputTokens: b[0]!.input }]);
    expect(beta.body.bindings).toEqual([
      {
        binding: 'gw',
        stored: true,
        calls: 2,
        tokens: b[0]!.input + b[0]!.output,
        costUsd: b[0]!.cost,
        reserved: { calls: 0, tokens: 0, costUsd: 0 },
        budget: { tokensPerDay: 50000, costPerDayUsd: 5 },
      },
    ]);
    expect(beta.text).not.toContain('sm-acme');
    expect((await call('/v1/spend', tok.adminA)).body).toMatchObject({ tenant: 'acme', models: acme.body.models });
  });

  it('refuses platform and approver tokens (403 naming the roles) and no token (401)', async () => {
    for (const path of ['/v1/spend', '/v1/skills']) {
      for (const token of [tok.platformA, tok.approverA]) {
        const r = await call(path, token);
        expect(r.status, r.text).toBe(403);
        expect(r.body).toMatchObject({ code: 'forbidden', requiredRole: ['admin', 'viewer'] });
      }
      expect((await fetch(`${server.url}${path}`)).status).toBe(401);
    }
  });
});

describe('GET /v1/skills', () => {
  it('a run that finds the skill changed sets `changed`; applying it again clears it; beta never sees it', async () => {
    const recorded = readSkill(skillDir, 'style').digest;
    const before = await call('/v1/skills', tok.viewerA);
    expect(before.status, before.text).toBe(200);
    expect(before.body.skills).toEqual([
      { id: 'style', digest: recorded, name: 'style', version: '1.0.0', recordedAt: expect.any(String), changed: null },
    ]);
    writeFileSync(join(skillDir, 'SKILL.md'), '---\nname: style\nversion: 1.0.0\n---\nWrite loudly. Edited.\n');
    const found = readSkill(skillDir, 'style').digest;
    const runId = await runOnce(tok.platformA, 'sk');
    const after = await call('/v1/skills', tok.viewerA);
    const [skill] = after.body.skills as Json[];
    expect(skill).toMatchObject({ id: 'style', digest: recorded, changed: { digest: found, runId } });
    const at = Date.parse((skill!.changed as { at: string }).at);
    expect(Math.abs(Date.now() - at)).toBeLessThan(60_000);
    const beta = await call('/v1/skills', tok.viewerB);
    expect(beta.body).toEqual({ skills: [] });

    await apply(config('beta', 2));
    expect((await call('/v1/skills', tok.adminA)).body.skills).toEqual([
      { id: 'style', digest: found, name: 'style', version: '1.0.0', recordedAt: expect.any(String), changed: null },
    ]);

    // Edited again, seen by a run, then put back as applied before the next apply: that apply clears the flag too.
    const applied = readFileSync(join(skillDir, 'SKILL.md'), 'utf8');
    writeFileSync(join(skillDir, 'SKILL.md'), `${applied}A third edit.\n`);
    const second = await runOnce(tok.platformA, 'sk');
    expect((await call('/v1/skills', tok.viewerA)).body.skills).toMatchObject([{ changed: { runId: second } }]);
    writeFileSync(join(skillDir, 'SKILL.md'), applied);
    await apply(config('beta', 2));
    expect((await call('/v1/skills', tok.viewerA)).body.skills).toMatchObject([{ digest: found, changed: null }]);
  });
});
