// The egress proxy's close() ends what is in flight: a plain http:// request whose upstream never
// answers must not hold a run's release (and with it the session) forever. And one run holds a bounded number of
// connections to it (an outside attack held hundreds).
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, request, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { connect, type Socket } from 'node:net';
import type { EgressGate } from '../../../host/sandbox/egressDecision.js';
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

describe('egress proxy: what one request cannot do to the host', () => {
  async function proxyWith(gate?: EgressGate, timeouts = { headersMs: 1_000, requestMs: 1_500 }) {
    const upstream = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.end('ok'));
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const port = (upstream.address() as { port: number }).port;
    const dir = mkdtempSync(join(tmpdir(), 'paddock-egress-'));
    const socketPath = join(dir, 'proxy.sock');
    const decisions: string[] = [];
    const proxy = await startEgressProxy(
      socketPath,
      { allow: [`127.0.0.1:${port}`], allowPrivate: true },
      (d) => decisions.push(`${d.allowed} ${d.reason}`),
      timeouts,
    );
    if (gate) proxy.setGate(gate);
    cleanups.push(() => {
      upstream.closeAllConnections();
      upstream.close();
      rmSync(dir, { recursive: true, force: true });
    });
    return { proxy, port, socketPath, decisions };
  }
  /** Everything the proxy answers on a raw connection, until it closes it. */
  const answerOf = (socket: Socket) =>
    new Promise<string>((resolve) => {
      let got = '';
      socket.on('data', (d: Buffer) => (got += d.toString('latin1')));
      socket.on('close', () => resolve(got));
      socket.on('error', () => undefined);
    });

  it('a body trickled past the whole-request timeout is answered 408 and its connection closed', async () => {
    const { proxy, port, socketPath } = await proxyWith();
    const socket = connect(socketPath);
    const answer = answerOf(socket);
    socket.write(`POST http://127.0.0.1:${port}/ HTTP/1.1\r\nhost: x\r\ncontent-length: 1000\r\n\r\n`);
    const trickle = setInterval(() => socket.write('a'), 100);
    try {
      expect(await answer).toMatch(/^HTTP\/1\.1 408 /);
    } finally {
      clearInterval(trickle);
      await proxy.close();
    }
  });

  it('a tunnel scanner that throws ends that tunnel, not the host; the proxy serves the next one', async () => {
    const gate: EgressGate = {
      destination: async () => undefined,
      outbound: () => undefined,
      tunnel: () => () => {
        throw new Error('the run journal is closed');
      },
    };
    const { proxy, port, socketPath } = await proxyWith(gate);
    for (let i = 0; i < 2; i++) {
      const socket = connect(socketPath);
      const answer = answerOf(socket);
      socket.write(`CONNECT 127.0.0.1:${port} HTTP/1.1\r\nhost: x\r\n\r\n`);
      socket.once('data', () => socket.write('GET / HTTP/1.1\r\nhost: x\r\n\r\n'));
      // Established, then closed at the first chunk through it (the scanner threw); nothing reached upstream.
      expect(await answer).toBe('HTTP/1.1 200 Connection Established\r\n\r\n');
    }
    await proxy.close();
  });
});
