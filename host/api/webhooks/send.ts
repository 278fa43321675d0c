/** One signed POST of a webhook body to a checked destination: pinned address, no redirects, bounded, timed. */
import { createHmac } from 'node:crypto';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import type { Destination } from './destination.js';

/** Bytes of a receiver's answer the host reads (and discards) before closing the connection. */
export const MAX_RESPONSE_BYTES = 64 * 1024;

/** `v1=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>`. */
export function signatureOf(secret: string, timestamp: number, body: string): string {
  return `v1=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

/** What one attempt came to: an HTTP status, or an error before one arrived. */
export type SendResult = { status: number; error: null } | { status: null; error: string };

/** The headers of one attempt (the timestamp is the attempt's, the body the delivery's). */
export function webhookHeaders(deliveryId: string, secret: string, timestamp: number, body: string) {
  return {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(body)),
    'user-agent': 'paddock-webhooks/1',
    'paddock-webhook-id': deliveryId,
    'paddock-webhook-timestamp': String(timestamp),
    'paddock-webhook-signature': signatureOf(secret, timestamp, body),
  };
}

/**
 * POST `body` to `dest`, connecting to `dest.address` whatever the name resolves to now. Redirects are
 * answers like any other (a 3xx is not 2xx: not followed). Resolves once the answer's status arrived and at
 * most {@link MAX_RESPONSE_BYTES} of its body were read, or with the error; never rejects.
 */
export function sendWebhook(
  dest: Destination,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
  /** The attempt's whole deadline, named in the timeout error (`timeoutMs` is what is left of it). */
  deadlineMs = timeoutMs,
): Promise<SendResult> {
  // The connection goes to the address that was checked (the host name still names the Host header and TLS).
  const pinned: LookupFunction = (_hostname, options, callback) => {
    if (options.all) callback(null, [{ address: dest.address, family: dest.family }]);
    else callback(null, dest.address, dest.family);
  };
  const request = dest.url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve) => {
    let settled = false;
    const finish = (result: SendResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      resolve(result);
    };
    const req = request({
      host: dest.hostname,
      port: dest.port,
      path: `${dest.url.pathname}${dest.url.search}`,
      method: 'POST',
      headers,
      lookup: pinned,
      agent: false, // no pooled socket: each attempt connects to its own checked address
    });
    const timer = setTimeout(() => finish({ status: null, error: `timed out after ${deadlineMs} ms` }), timeoutMs);
    req.on('error', (error: NodeJS.ErrnoException) =>
      finish({ status: null, error: `${error.code ?? 'error'}: ${error.message}`.slice(0, 300) }),
    );
    req.on('response', (res: IncomingMessage) => {
      const status = res.statusCode ?? 0;
      let read = 0;
      res.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read >= MAX_RESPONSE_BYTES) finish({ status, error: null });
      });
      res.on('end', () => finish({ status, error: null }));
      res.on('error', () => finish({ status, error: null }));
    });
    req.end(body);
  });
}
