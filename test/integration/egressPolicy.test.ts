// The egress proxy under the run's policy (docs/approvals.md §6), with a real sandboxed runner and a real receiving
// HTTP server on loopback: a destination off the binding's list asks a person; a tainted run's every destination
// needs a one-time approval naming it and the data class; a plain-HTTP request carrying a secret value the host
// knows — in its body, a header, its URL, gzip-compressed, or a CONNECT host name — is blocked before a byte of it
// leaves. The receiver is checked for every byte it got.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunOutcome } from '../../host/process/outcome.js';
import { decideApproval, type ApprovalRow } from '../../host/state/approvals.js';
import { chatEvent, tempHost } from '../helpers/host.js';
import { rawDb } from '../helpers/rawDb.js';
import { pendingApproval } from '../helpers/approvals.js';

const CANARY = `sk-live-egresscanary${'Z'.repeat(24)}`;
const host = tempHost({ limits: { wallClockMs: 60_000 } });

/** Every request the loopback receiver got: method, URL, headers and body, as one text to grep. */
const received: string[] = [];
let receiver: Server;
let port = 0;

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('latin1')));
    req.on('end', () => {
      received.push(`${req.method} ${req.url}\n${JSON.stringify(req.headers)}\n${body}`);
      res.end('got it');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  port = (receiver.address() as AddressInfo).port;
  const binding = (id: string, egress: string[]) => ({
    id,
    runner: 'sends-through-egress',
    route: { bot: id },
    sandbox: 'bwrap' as const,
    grants: { fs: 'read' as const, approval: true },
    network: { egress, allowPrivate: true },
    approvalPolicy: 'ask' as const,
  });
  host.apply({ bindings: [binding('listed', [`127.0.0.1:${port}`]), binding('unlisted', [])] });
});
afterAll(async () => {
  await host.close();
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
});

type Step =
  | { plant: { path: string; content: string } }
  | { read: string }
  | { post: { url: string; body?: string; repeat?: number; header?: boolean; gzip?: boolean; encoding?: string } }
  | { connect: string };

async function start(bot: string, conversation: string, steps: Step[]) {
  const ticket = await host.dispatcher.dispatch(
    chatEvent({ bot, text: JSON.stringify({ steps }), conversation: { id: conversation } }),
  );
  if (ticket.status === 'duplicate') throw new Error('duplicate');
  return { runId: ticket.runId, done: ticket.done };
}
const resultsOf = (o: RunOutcome): string[] => {
  expect(o.status, o.reason).toBe('completed');
  return JSON.parse((o.result?.output?.parts[0] as { text: string }).text) as string[];
};
const decide = (row: ApprovalRow, outcome: 'approved' | 'denied') => {
  const r = decideApproval(host.store, row.id, { outcome, by: 'user:test-approver', at: new Date().toISOString() });
  expect(r.ok).toBe(true);
};
const egressAudit = (runId: string) =>
  (
    rawDb(host.store)
      .prepare("SELECT type, data FROM audit WHERE run_id = ? AND type LIKE 'egress.%' ORDER BY seq")
      .all(runId) as { type: string; data: string }[]
  ).map((r) => ({
    type: r.type,
    ...(JSON.parse(r.data) as { deniedBy?: string; method?: string; allowed?: boolean }),
  }));
const url = (path = '/') => `http://127.0.0.1:${port}${path}`;
const planted: Step[] = [
  { plant: { path: 'out/.env', content: `# local settings\nAPI_KEY="${CANARY}"\n` } },
  { read: 'out/.env' },
];

describe('egress under the run policy', () => {
  it('a destination off the list asks; approved once it goes, the next request to it asks again', async () => {
    const before = received.length;
    const { runId, done } = await start('unlisted', 'off-list', [
      { post: { url: url('/first'), body: 'hello' } },
      { post: { url: url('/second'), body: 'again' } },
    ]);
    const first = await pendingApproval(host.store, runId);
    expect(first).toMatchObject({
      effect: 'network',
      via: 'egress',
      target: { kind: 'domain', value: `127.0.0.1:${port}` },
      dataClass: null,
    });
    decide(first, 'approved');
    const second = await pendingApproval(host.store, runId);
    expect(second.id).not.toBe(first.id);
    decide(second, 'denied');
    const results = resultsOf(await done);
    expect(results[0]).toBe('200 got it');
    expect(results[1]).toMatch(/^403 paddock egress: .*denied by user:test-approver/);
    expect(received.slice(before).join('\n')).toContain('POST /first');
    expect(received.slice(before).join('\n')).not.toContain('/second');
    expect(egressAudit(runId).map((r) => [r.type, r.deniedBy])).toEqual([
      ['egress.allowed', undefined],
      ['egress.denied', 'user:test-approver'],
    ]);
  });

  it('a listed destination goes without asking while the run is not tainted', async () => {
    const before = received.length;
    const { runId, done } = await start('listed', 'clean', [{ post: { url: url('/clean'), body: 'nothing secret' } }]);
    expect(resultsOf(await done)).toEqual(['200 got it']);
    expect(received.slice(before).join('\n')).toContain('nothing secret');
    expect(egressAudit(runId).map((r) => r.type)).toEqual(['egress.allowed']);
  });

  it(
    'once tainted, a secret in the body, a header, the URL, a gzip body or a tunnel host name is blocked at once, ' +
      'and a clean request to the listed destination needs a one-time approval naming it and the data class',
    async () => {
      const before = received.length;
      const { runId, done } = await start('listed', 'tainted', [
        ...planted,
        { post: { url: url('/body'), body: 'key={value}' } },
        { post: { url: url('/header'), body: '{value}', header: true } },
        { post: { url: url('/q?k={value}') } },
        { post: { url: url('/gzip'), body: 'key={value}', gzip: true } },
        { connect: '{value}.example.com:443' },
        { post: { url: url('/denied'), body: 'innocent' } },
        { post: { url: url('/approved'), body: 'innocent too' } },
      ]);
      decide(await pendingApproval(host.store, runId), 'approved'); // the .env read (a credential floor)
      const denied = await pendingApproval(host.store, runId);
      expect(denied).toMatchObject({
        effect: 'network',
        via: 'egress',
        target: { kind: 'domain', value: `127.0.0.1:${port}` },
        destination: `127.0.0.1:${port}`,
        dataClass: expect.stringContaining('credential'),
      });
      decide(denied, 'denied');
      const approved = await pendingApproval(host.store, runId);
      expect(approved).toMatchObject({ destination: `127.0.0.1:${port}` });
      decide(approved, 'approved');
      const results = resultsOf(await done);
      expect(results.slice(0, 2)).toEqual(['planted', 'read']);
      for (const blocked of results.slice(2, 6))
        expect(blocked).toMatch(/^403 paddock egress: the bytes the run sends to .* carry a secret value/);
      expect(results[6]).toBe('403');
      expect(results[7]).toMatch(/^403 paddock egress: .*denied by user:test-approver/);
      expect(results[8]).toBe('200 got it');
      const got = received.slice(before).join('\n');
      expect(got).not.toContain(CANARY);
      expect(got).not.toMatch(/\/(body|header|q|gzip|denied)\b/);
      expect(got).toContain('innocent too');
      // The audit chain: the denied and the approved send each name the destination and the data class.
      const decisions = (
        rawDb(host.store)
          .prepare("SELECT data FROM audit WHERE run_id = ? AND type IN ('approval.denied', 'approval.approved')")
          .pluck()
          .all(runId) as string[]
      ).map((d) => JSON.parse(d) as { dataClass?: string; destination?: string });
      expect(decisions.filter((d) => d.destination === `127.0.0.1:${port}`)).toEqual([
        expect.objectContaining({ dataClass: expect.stringContaining('credential') }),
        expect.objectContaining({ dataClass: expect.stringContaining('credential') }),
      ]);
      const audit = egressAudit(runId);
      expect(audit.filter((r) => r.deniedBy === 'policy.secretScan')).toHaveLength(5);
      // The tunnel's name was refused before it was resolved: no resolver error, the scan's reason.
      expect(audit.find((r) => r.method === 'CONNECT')).toMatchObject({
        allowed: false,
        deniedBy: 'policy.secretScan',
      });
      // Nothing the host stored or streamed holds the secret: the blocked requests' reasons do not quote it.
      const stored = (
        rawDb(host.store).prepare('SELECT data FROM events UNION ALL SELECT data FROM audit').pluck().all() as string[]
      ).join('\n');
      expect(stored).not.toContain(CANARY);
    },
  );

  it('a body too large to scan, or in an encoding the host cannot read, is refused, not sent unscanned', async () => {
    const before = received.length;
    const { runId, done } = await start('listed', 'unscannable', [
      { post: { url: url('/huge'), body: 'x'.repeat(1024), repeat: 9 * 1024 } },
      { post: { url: url('/zstd'), body: 'opaque', encoding: 'zstd' } },
      { post: { url: url('/bomb'), body: '0'.repeat(1024), repeat: 40 * 1024, gzip: true } },
    ]);
    const results = resultsOf(await done);
    expect(results[0]).toMatch(/^413 paddock egress: a plain-HTTP body over \d+ bytes cannot be scanned/);
    expect(results[1]).toBe('415 paddock egress: content-encoding "zstd" cannot be scanned');
    // 40 MiB of zeros gzip to ~40 KiB: inflating it past the bound is refused, not buffered.
    expect(results[2]).toMatch(/^415 paddock egress: the body does not decode as its content-encoding says/);
    expect(received.slice(before).join('\n')).not.toMatch(/\/(huge|zstd|bomb)\b/);
    expect(egressAudit(runId).map((r) => r.allowed)).toEqual([false, false, false]);
  });
});
