// The binding's egress allowlist reaches the REAL Claude Code and Codex CLIs (issue 11 item 14):
// a command their Bash tool runs reaches an allowlisted server through the host's egress proxy,
// anything else is refused by the proxy and audited, and nothing gets out around the proxy.
// The servers are the test's own, on loopback addresses other than 127.0.0.1 (the gateway's
// NO_PROXY), so the only way to them from inside the sandbox is the proxy.
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { harnessReports } from '../../host/harness/harnesses.js';
import type { RunOutcome } from '../../host/process/outcome.js';
import type { Update } from '../../sdk/protocol/types.js';
import { chatEvent, tempHost } from '../helpers/host.js';
import { rawDb } from '../helpers/rawDb.js';

const host = tempHost({ limits: { wallClockMs: 120_000 } });
const servers: Server[] = [];
let port = 0;
const hits: string[] = [];

/** A server on `address` that records every request it gets. */
async function listen(address: string, fixedPort = 0): Promise<number> {
  const server = createServer((req, res) => {
    hits.push(`${address}${req.url}`);
    res.end(`hello-from-${address}`);
  }).listen(fixedPort, address);
  await new Promise((r) => server.once('listening', r));
  servers.push(server);
  return (server.address() as { port: number }).port;
}

afterAll(async () => {
  await host.close();
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
});

async function dispatch(
  bot: string,
  text: string,
  conversation: string,
): Promise<{ outcome: RunOutcome; updates: Update[] }> {
  const updates: Update[] = [];
  const ticket = await host.dispatcher.dispatch(chatEvent({ bot, text, conversation: { id: conversation } }), {
    onUpdate: (u) => updates.push(u),
  });
  if (ticket.status === 'duplicate') throw new Error('duplicate');
  return { outcome: await ticket.done, updates };
}
const egressAudit = (runId: string) =>
  (
    rawDb(host.store)
      .prepare("SELECT type, data FROM audit WHERE type LIKE 'egress.%' AND run_id = ? ORDER BY seq")
      .all(runId) as { type: string; data: string }[]
  ).map((r) => ({ type: r.type, ...(JSON.parse(r.data) as Record<string, unknown>) }));
const toolOutput = (updates: Update[]) =>
  updates
    .filter((u) => u.kind === 'tool.finished')
    .map((u) => String((u as { output?: unknown }).output ?? (u as { error?: unknown }).error ?? ''))
    .join('\n');

beforeAll(async () => {
  for (const name of ['claude', 'codex']) {
    const h = harnessReports().find((r) => r.name === name)!;
    expect(h.version, `the ${name} CLI is needed: ${h.problem} (bash scripts/install-harnesses.sh)`).toBeTruthy();
  }
  port = await listen('127.0.0.2');
  await listen('127.0.0.3', port); // the same port on another loopback address: not allowlisted
  const network = { egress: [`127.0.0.2:${port}`], allowPrivate: true };
  host.apply({
    resources: { models: [{ id: 'sm', provider: 'scripted', model: 'scripted-1' }] },
    bindings: [
      {
        id: 'cc',
        runner: 'claude-code',
        route: { bot: 'cc' },
        sandbox: 'bwrap',
        grants: { models: ['sm'] },
        config: { allowedTools: ['Bash'] },
        network,
      },
      {
        id: 'cx',
        runner: 'codex',
        route: { bot: 'cx' },
        sandbox: 'bwrap',
        grants: { models: ['sm'] },
        config: { sandbox: 'workspace-write' },
        network,
      },
      {
        id: 'cc-closed',
        runner: 'claude-code',
        route: { bot: 'cc-closed' },
        sandbox: 'bwrap',
        grants: { models: ['sm'] },
        config: { allowedTools: ['Bash'] },
      },
    ],
  });
});

/** Allowed through the proxy; another address refused by the proxy; a direct connection impossible. */
const probe = () =>
  [
    `curl -sS -m 20 http://127.0.0.2:${port}/allowed`,
    `curl -sS -m 20 -o /dev/null -w 'denied:%{http_code}' http://127.0.0.3:${port}/denied`,
    `curl -sS -m 20 --noproxy '*' http://127.0.0.2:${port}/direct || echo direct:failed`,
    'echo proxy:$https_proxy',
  ].join('; ');

describe('the egress allowlist reaches the harness CLIs (real CLIs, bwrap)', () => {
  for (const bot of ['cc', 'cx']) {
    it(
      `${bot === 'cc' ? 'Claude Code' : 'Codex'}: its Bash reaches the allowlisted server through the proxy; ` +
        `another is refused and audited`,
      async () => {
        hits.length = 0;
        const { outcome, updates } = await dispatch(bot, `USE_TOOL:Bash:${probe()}`, `c-${bot}`);
        expect(outcome.status, outcome.reason).toBe('completed');
        const out = toolOutput(updates);
        expect(out).toContain('hello-from-127.0.0.2');
        expect(out).toContain('denied:403');
        expect(out).toContain('direct:failed');
        expect(out).toMatch(/proxy:http:\/\/127\.0\.0\.1:3128/);
        expect(hits).toEqual(['127.0.0.2/allowed']); // nothing reached the other server, nothing went around the proxy
        const audit = egressAudit(outcome.runId);
        expect(audit).toContainEqual(expect.objectContaining({ type: 'egress.allowed', host: '127.0.0.2', port }));
        expect(audit).toContainEqual(
          expect.objectContaining({ type: 'egress.denied', host: '127.0.0.3', port, allowed: false }),
        );
      },
      180_000,
    );
  }

  it('without network.egress the harness gets no proxy and reaches nothing', async () => {
    hits.length = 0;
    const { outcome, updates } = await dispatch('cc-closed', `USE_TOOL:Bash:${probe()}`, 'c-closed');
    expect(outcome.status, outcome.reason).toBe('completed');
    const out = toolOutput(updates);
    expect(out).not.toContain('hello-from');
    expect(out).toContain('direct:failed');
    expect(out).toMatch(/proxy:\s*$/m);
    expect(hits).toEqual([]);
    expect(egressAudit(outcome.runId)).toEqual([]);
  }, 180_000);
});
