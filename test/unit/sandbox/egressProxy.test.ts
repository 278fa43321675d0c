// The egress proxy's close() ends what is in flight: a plain http:// request whose upstream never
// answers must not hold a run's release (and with it the session) forever. And one run holds a bounded number of
// connections to it (an outside attack held hundreds).
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, request, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { connect, type Socket } from 'node:net';
import { MAX_EGRESS_CONNECTIONS_PER_RUN, startEgressProxy } from '../../../host/sandbox/egressProxy.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

describe('egress proxy close()', () => {
  it('resolves while a proxied http:// request waits on a silent upstream, and removes its socket', async () => {
    // A loopback upstream that takes requests and never answers them.
    const held: IncomingMessage[] = [];
    let arrived!: () => void;
    const arrival = new Promise<void>((resolve) => (arrived = resolve));
    const upstream = createServer((req) => {
      held.push(req);
      arrived();
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => {
      upstream.closeAllConnections();
      upstream.close();
    });
    const port = (upstream.address() as { port: number }).port;
    const dir = mkdtempSync(join(tmpdir(), 'paddock-egress-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const socketPath = join(dir, 'proxy.sock');
    const decisions: boolean[] = [];
    const proxy = await startEgressProxy(socketPath, { allow: [`127.0.0.1:${port}`], allowPrivate: true }, (d) =>
      decisions.push(d.allowed),
    );
    const client = request({ socketPath, method: 'GET', path: `http://127.0.0.1:${port}/slow` });
    const clientEnded = new Promise<string>((resolve) => {
      client.on('error', (e) => resolve(`error: ${e.message}`));
      client.on('response', (res) => res.on('close', () => resolve(`closed after ${res.statusCode}`)));
    });
    client.end();
    await arrival;
    expect(decisions).toEqual([true]);
    expect(held).toHaveLength(1);
    await proxy.close(); // the test's timeout is the failure: before the fix this never resolved
    expect(existsSync(socketPath)).toBe(false);
    expect(await clientEnded).toMatch(/^error: /);
  });
});

describe('egress proxy bounds', () => {
  it(`holds at most ${MAX_EGRESS_CONNECTIONS_PER_RUN} connections of a run: more are closed at accept`, async () => {
    const upstream = createServer((_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const port = (upstream.address() as { port: number }).port;
    const dir = mkdtempSync(join(tmpdir(), 'paddock-egress-'));
    const socketPath = join(dir, 'proxy.sock');
    const proxy = await startEgressProxy(socketPath, { allow: [`127.0.0.1:${port}`], allowPrivate: true }, () => {});
    cleanups.push(() => {
      upstream.close();
      rmSync(dir, { recursive: true, force: true });
    });
    const total = MAX_EGRESS_CONNECTIONS_PER_RUN + 36;
    let closed = 0;
    let allOver!: () => void;
    const over = new Promise<void>((resolve) => (allOver = resolve));
    const sockets = await Promise.all(
      Array.from(
        { length: total },
        () =>
          new Promise<Socket>((resolve) => {
            const socket = connect(socketPath, () => resolve(socket));
            socket.on('error', () => undefined);
            socket.on('close', () => {
              closed += 1;
              if (closed === total - MAX_EGRESS_CONNECTIONS_PER_RUN) allOver();
            });
          }),
      ),
    );
    await over; // the test's timeout is the failure: without the bound nothing is closed
    // The ones kept are served: each answers a whole request.
    const open = sockets.filter((s) => !s.destroyed && s.readyState === 'open');
    const answers = await Promise.all(
      open.map(
        (socket) =>
          new Promise<string>((resolve) => {
            let got = '';
            socket.on('data', (d: Buffer) => {
              got += d.toString();
              if (got.includes('ok')) resolve(got.split('\r\n')[0]!);
            });
            socket.on('close', () => resolve(got.split('\r\n')[0] ?? 'closed'));
            socket.write(`GET http://127.0.0.1:${port}/ HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n\r\n`);
          }),
      ),
    );
    expect(answers.filter((a) => a === 'HTTP/1.1 200 OK')).toHaveLength(MAX_EGRESS_CONNECTIONS_PER_RUN);
    for (const socket of sockets) socket.destroy();
    await proxy.close();
  });
});
