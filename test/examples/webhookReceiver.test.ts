import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { handleWebhook, MAX_BODY_BYTES } from '../../examples/webhook-receiver/receiver.js';
import { createWebhook, listDeliveries, WebhookWorker } from '../../host/api/webhooks/index.js';
import { signatureOf } from '../../host/api/webhooks/send.js';
import { tempStore } from '../helpers/store.js';

// examples/webhook-receiver: the receiver a platform copies, against paddock's real delivery worker.
const closers: (() => unknown)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A loopback server whose handler is set once the secret is known (the URL is needed to register first). */
async function server() {
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  const s = createServer((req, res) => handler!(req, res));
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise((resolve) => s.close(resolve)));
  return {
    url: `http://127.0.0.1:${(s.address() as AddressInfo).port}/hook`,
    use: (h: typeof handler) => (handler = h),
  };
}

/** POST raw bytes; the status and text answered. */
async function post(url: string, headers: Record<string, string>, body: string) {
  const res = await fetch(url, { method: 'POST', headers, body });
  return [res.status, await res.text()];
}

const signed = (secret: string, id: string, body: string, ts = Math.floor(Date.now() / 1000)) => ({
  'content-type': 'application/json',
  'paddock-webhook-id': id,
  'paddock-webhook-timestamp': String(ts),
  'paddock-webhook-signature': signatureOf(secret, ts, body),
});

describe('examples/webhook-receiver', () => {
  it("takes paddock's delivery, retried until its handler succeeds, handled once; refuses forgeries", async () => {
    const { store } = tempStore();
    closers.push(() => store.close());
    const srv = await server();
    const hook = createWebhook(store, { tenant: 'default', url: srv.url, actor: 'token:test' });
    const handled: Record<string, unknown>[] = [];
    let failures = 1;
    srv.use(
      handleWebhook({
        secret: hook.secret,
        onDelivery: (p) => {
          if (failures-- > 0) throw new Error('database down');
          handled.push(p);
        },
      }),
    );
    const { sessionId } = store.ensureSession('default', 'b1', 'c1');
    store.append(sessionId, [
      { type: 'run.queued', runId: 'run_r1', data: { runner: 'echo', goalRevision: 0, attempt: 1, bindingId: 'b1' } },
      { type: 'run.ended', runId: 'run_r1', data: { status: 'completed', reason: 'ok', exitCode: 0, signal: null } },
    ]);
    await new WebhookWorker(store, { backoffMs: () => 0 }).runDue();
    expect(handled.map((p) => [p.runId, p.outcome])).toEqual([['run_r1', { status: 'completed', reason: 'ok' }]]);
    const [delivery] = listDeliveries(store, 'default', hook.id);
    expect(delivery!.log.map((a) => a.status)).toEqual([500, 204]);

    // A replay of the delivered id (a fresh, validly signed timestamp): acknowledged, not handled again.
    const body = JSON.stringify({ type: 'run.ended', deliveryId: delivery!.id, runId: 'run_r1' });
    expect(await post(srv.url, signed(hook.secret, delivery!.id, body), body)).toEqual([200, 'replay']);
    // Forgeries: another secret, a stale timestamp, a body that does not name the id, no headers, too big.
    expect(await post(srv.url, signed('whsec_guess', 'whd_new', body), body)).toEqual([401, 'bad-signature']);
    const stale = Math.floor(Date.now() / 1000) - 301;
    expect(await post(srv.url, signed(hook.secret, 'whd_new', body, stale), body)).toEqual([401, 'stale']);
    expect(await post(srv.url, signed(hook.secret, 'whd_new', body), body)).toEqual([400, 'bad-body']);
    expect(await post(srv.url, { 'content-type': 'application/json' }, body)).toEqual([401, 'missing-headers']);
    const big = 'x'.repeat(MAX_BODY_BYTES + 1);
    expect((await post(srv.url, signed(hook.secret, 'whd_big', big), big))[0]).toBe(413);
    expect(handled).toHaveLength(1);
  });

  it('is a few dozen lines a platform can read: verify.ts plus receiver.ts', async () => {
    const { readFileSync } = await import('node:fs');
    const { repoPath } = await import('../helpers/fixtures.js');
    const lines = ['verify.ts', 'receiver.ts'].map(
      (f) => readFileSync(repoPath(`examples/webhook-receiver/${f}`), 'utf8').split('\n').length,
    );
    expect(lines[0]! + lines[1]!).toBeLessThanOrEqual(160);
    expect(readFileSync(repoPath('examples/webhook-receiver/verify.ts'), 'utf8')).not.toMatch(/from '(\.\.\/)+host/);
  });
});
