// What one run can hold of the host through its egress proxy (docs/approvals.md §6, "Egress"), from an outside
// attack: it opened 48 connections each holding an 8 MiB body for the scan (the host grew by ~750 MiB, nothing bounded
// connections), and 400 connections trickling a byte a second that the proxy never closed. Now: 32 MiB of bodies
// held for scanning over all of a run's connections (more is answered 503), a request's head must arrive in 10 s and
// the whole request in 30 s (408, closed), and 64 connections per run (test/unit/sandbox/egressProxy.test.ts).
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_BUFFERED_BODY_BYTES_PER_RUN } from '../../host/sandbox/egressBody.js';
import { EGRESS_HEADERS_TIMEOUT_MS } from '../../host/sandbox/egressProxy.js';
import { chatEvent, tempHost } from '../helpers/host.js';

const host = tempHost({ limits: { wallClockMs: 90_000 } });
/** A receiver that takes requests and never answers: a forwarded body stays held until the run ends. */
const held: IncomingMessage[] = [];
let silent: Server;
let port = 0;

beforeAll(async () => {
  silent = createServer((req) => {
    held.push(req);
    req.resume();
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  port = (silent.address() as AddressInfo).port;
  host.apply({
    bindings: [
      {
        id: 'holder',
        runner: 'holds-egress-open',
        route: { bot: 'holder' },
        sandbox: 'bwrap',
        network: { egress: [`127.0.0.1:${port}`], allowPrivate: true },
        // A gate over the proxy: the run's policy scans what it sends (and so reads bodies whole).
        approvalPolicy: 'deny',
      },
    ],
  });
});
afterAll(async () => {
  await host.close();
  silent.closeAllConnections();
  silent.close();
});

interface Held {
  connected: number;
  closedByProxy: number;
  closedAt: number[];
  statuses: string[];
}
async function hold(message: {
  conns: number;
  holdMs: number;
  until: number;
  part: 'head' | 'fullbody';
}): Promise<Held> {
  const ticket = await host.dispatcher.dispatch(
    chatEvent({
      bot: 'holder',
      text: JSON.stringify({ ...message, target: `127.0.0.1:${port}` }),
      conversation: { id: `c-${Math.random()}` },
    }),
  );
  if (ticket.status === 'duplicate') throw new Error('duplicate');
  const outcome = await ticket.done;
  expect(outcome.status, outcome.reason).toBe('completed');
  return JSON.parse((outcome.result?.output?.parts[0] as { text: string }).text) as Held;
}

describe('one run against its egress proxy', () => {
  it(`a run holds at most ${MAX_BUFFERED_BODY_BYTES_PER_RUN} bytes of bodies to scan; the rest: 503`, async () => {
    const before = held.length;
    // Until 4 answers came (the refusals; the held ones are never answered), 60 s at most.
    const got = await hold({ conns: 8, holdMs: 60_000, until: 4, part: 'fullbody' });
    expect(got.connected).toBe(8);
    // 8 bodies of 8 MiB against 32 MiB: at most 4 are held (and forwarded to the silent receiver), the rest refused.
    const refused = got.statuses.filter((s) => s === 'HTTP/1.1 503');
    expect(refused.length).toBeGreaterThanOrEqual(4);
    expect(held.length - before).toBeLessThanOrEqual(4);
  });

  it('a request head trickled a byte a second is answered 408 and closed by the head timeout', async () => {
    const got = await hold({ conns: 20, holdMs: EGRESS_HEADERS_TIMEOUT_MS + 20_000, until: 20, part: 'head' });
    expect(got.connected).toBe(20);
    // Every one answered 408 by the proxy, none before its head was overdue.
    expect(got.statuses).toEqual(Array.from({ length: 20 }, () => 'HTTP/1.1 408'));
    expect(Math.min(...got.closedAt)).toBeGreaterThanOrEqual(EGRESS_HEADERS_TIMEOUT_MS - 1_000);
  });
});
