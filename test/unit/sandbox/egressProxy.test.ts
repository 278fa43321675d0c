// The egress proxy's close() ends what is in flight: a plain http:// request whose upstream never
// answers must not hold a run's release (and with it the session) forever.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, request, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startEgressProxy } from '../../../host/sandbox/egressProxy.js';

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
