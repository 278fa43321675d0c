// `paddock serve --max-queued-per-tenant` as a child process: one tenant flooding new conversations is refused 429
// queue_full once its waiting runs reach the bound, while another tenant's events are still taken (the attack of
// finding F4: each event in a new conversation got around the per-session maxQueued).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { paddock } from '../helpers/cli.js';
import { chatEvent } from '../helpers/host.js';
import { startServe, type ServeChild } from '../helpers/serve.js';

const home = mkdtempSync(join(tmpdir(), 'paddock-serve-tenant-queue-'));
let server: ServeChild;
const tokens = { acme: '', beta: '' };

async function token(tenant: string): Promise<string> {
  const r = await paddock(['tokens', 'create', '--tenant', tenant, '--role', 'platform'], { dataDir: home });
  expect(r.exitCode, r.stderr).toBe(0);
  return r.stdout.trim();
}

beforeAll(async () => {
  // One run at a time per binding, each a minute long: every event in a new conversation waits behind the first.
  const held = 'runner: echo, sandbox: process, config: { delayMs: 60000 }, limits: { maxConcurrentRuns: 1 }';
  const yaml = [
    'bindings:',
    `  - { id: acme-one, tenant: acme, ${held}, route: { platform: telegram, bot: acme } }`,
    `  - { id: beta-one, tenant: beta, ${held}, route: { platform: telegram, bot: beta } }`,
  ].join('\n');
  writeFileSync(join(home, 'paddock.yaml'), `${yaml}\n`);
  const applied = await paddock(['apply', '-f', join(home, 'paddock.yaml')], { dataDir: home });
  expect(applied.exitCode, applied.stderr).toBe(0);
  tokens.acme = await token('acme');
  tokens.beta = await token('beta');
  server = await startServe(home, ['--rate', '1000', '--burst', '1000', '--max-queued-per-tenant', '2']);
}, 120_000);
afterAll(async () => {
  // The held runs are cancelled by the helper's second SIGTERM.
  expect(await server.stop()).toBe(0);
});

const post = async (t: string, bot: string, conversation: string) => {
  const res = await fetch(`${server.url}/v1/events`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t}`, 'content-type': 'application/json' },
    body: JSON.stringify(chatEvent({ bot, text: 'hold on', conversation: { id: conversation } })),
  });
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as object };
};

describe('paddock serve: the per-tenant bound on waiting runs', () => {
  it('a tenant at --max-queued-per-tenant is refused 429 queue_full; another tenant is still queued', async () => {
    const flood = [];
    for (const c of ['a1', 'a2', 'a3']) flood.push(await post(tokens.acme, 'acme', c));
    expect(flood.map((r) => [r.status, (r.body as { status: string }).status])).toEqual([
      [202, 'started'],
      [202, 'queued'],
      [202, 'queued'],
    ]);
    const over = await post(tokens.acme, 'acme', 'a4');
    expect(over).toMatchObject({ status: 429, retryAfter: '1' });
    expect(over.body).toMatchObject({
      code: 'queue_full',
      reason: 'queue_full',
      bindingId: 'acme-one',
      detail:
        'tenant "acme" already has 2 runs waiting (the most one tenant may queue on this host); retry when some ' +
        'have started',
    });
    // beta's events are not behind acme's queue: its own run starts and its own queue takes two.
    const beta = [];
    for (const c of ['b1', 'b2', 'b3']) beta.push(await post(tokens.beta, 'beta', c));
    expect(beta.map((r) => (r.body as { status: string }).status)).toEqual(['started', 'queued', 'queued']);
    expect((await post(tokens.beta, 'beta', 'b4')).body).toMatchObject({ code: 'queue_full' });
  });
});
