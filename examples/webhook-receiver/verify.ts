// Verifying a paddock webhook (docs/http-api.md, "Webhooks"): plain Node, no dependency, copy it as is.
import { createHmac, timingSafeEqual } from 'node:crypto';

/** Deliveries older or newer than this (seconds) are refused: a captured request cannot be replayed later. */
export const TOLERANCE_S = 300;

/** Why a request is refused, or the delivery it carries. */
export type Verified =
  | { ok: true; deliveryId: string; payload: Record<string, unknown> }
  | { ok: false; reason: 'missing-headers' | 'bad-timestamp' | 'stale' | 'bad-signature' | 'bad-body' | 'replay' };

/** Delivery ids already handled, kept for the tolerance window (an older request is refused as stale anyway). */
export class ReplayGuard {
  private readonly seen = new Map<string, number>();
  /** Whether `id` was handled; forgets ids older than the window. */
  has(id: string, nowS: number): boolean {
    for (const [old, at] of this.seen) if (at < nowS - 2 * TOLERANCE_S) this.seen.delete(old);
    return this.seen.has(id);
  }
  /** Remember `id` (before handling it, so a concurrent copy is refused too). */
  add(id: string, nowS: number): void {
    this.seen.set(id, nowS);
  }
  /** Forget `id`: its handling failed, and paddock's retry must get through. */
  delete(id: string): void {
    this.seen.delete(id);
  }
}

const header = (headers: Record<string, string | string[] | undefined>, name: string) => {
  const value = headers[name];
  return Array.isArray(value) ? undefined : value;
};

/**
 * Verify one request: the HMAC over `<timestamp>.<exact body bytes>` (constant-time), the timestamp's age,
 * the delivery id (taken from the signed body; the header must agree) not handled before.
 */
export function verifyWebhook(input: {
  secret: string;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  guard: ReplayGuard;
  nowS?: number;
}): Verified {
  const nowS = input.nowS ?? Math.floor(Date.now() / 1000);
  const id = header(input.headers, 'paddock-webhook-id');
  const timestamp = header(input.headers, 'paddock-webhook-timestamp');
  const signature = header(input.headers, 'paddock-webhook-signature');
  if (!id || !timestamp || !signature) return { ok: false, reason: 'missing-headers' };
  if (!/^\d{1,12}$/.test(timestamp)) return { ok: false, reason: 'bad-timestamp' };
  if (Math.abs(nowS - Number(timestamp)) > TOLERANCE_S) return { ok: false, reason: 'stale' };
  const expected = Buffer.from(
    'v1=' +
      createHmac('sha256', input.secret)
        .update(Buffer.concat([Buffer.from(`${timestamp}.`), input.body]))
        .digest('hex'),
  );
  const given = Buffer.from(signature);
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    return { ok: false, reason: 'bad-signature' };
  let payload: Record<string, unknown>;
  try {
    payload = JSON.parse(input.body.toString('utf8')) as Record<string, unknown>;
  } catch {
    return { ok: false, reason: 'bad-body' };
  }
  // The id header is not signed; the body's id is. A replay under a fresh id header is still a replay.
  if (payload.deliveryId !== id) return { ok: false, reason: 'bad-body' };
  if (input.guard.has(id, nowS)) return { ok: false, reason: 'replay' };
  return { ok: true, deliveryId: id, payload };
}
