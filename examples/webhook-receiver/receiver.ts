// A webhook receiver: an HTTP server that verifies each delivery before handing it on.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { ReplayGuard, verifyWebhook } from './verify.js';

/** Bodies larger than this are refused unread (paddock's are far smaller). */
export const MAX_BODY_BYTES = 1024 * 1024;

/** Options of {@link handleWebhook}. */
export interface ReceiverOptions {
  secret: string;
  onDelivery: (payload: Record<string, unknown>) => void | Promise<void>;
  guard?: ReplayGuard;
}

/** A server running {@link handleWebhook}. */
export function createReceiver(options: ReceiverOptions): Server {
  return createServer(handleWebhook(options));
}

/**
 * A request handler that answers 204 to a verified delivery once `onDelivery` handled it, 401 to a bad signature or
 * timestamp, 400 to a bad body, and 200 without calling `onDelivery` again to a delivery id it handled before
 * (a retry whose first answer was lost stops; a replay does nothing). A throwing `onDelivery` answers 500:
 * paddock retries, and the id is not remembered.
 */
export function handleWebhook(options: ReceiverOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const guard = options.guard ?? new ReplayGuard();
  return (req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
      else if (!res.headersSent) res.writeHead(413, { connection: 'close' }).end();
    });
    req.on('end', () => {
      if (res.headersSent) return;
      if (req.method !== 'POST') return void res.writeHead(405).end();
      const verified = verifyWebhook({
        secret: options.secret,
        headers: req.headers,
        body: Buffer.concat(chunks),
        guard,
      });
      if (!verified.ok) {
        const status = verified.reason === 'replay' ? 200 : verified.reason === 'bad-body' ? 400 : 401;
        return void res.writeHead(status, { 'content-type': 'text/plain' }).end(verified.reason);
      }
      guard.add(verified.deliveryId, Math.floor(Date.now() / 1000));
      Promise.resolve()
        .then(() => options.onDelivery(verified.payload))
        .then(
          () => res.writeHead(204).end(),
          () => {
            guard.delete(verified.deliveryId);
            res.writeHead(500).end();
          },
        );
    });
  };
}
