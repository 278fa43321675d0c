/**
 * What `paddock serve` answers when Node's HTTP parser refuses a request before the server sees it (headers over
 * Node's 16 KiB, bytes that are not HTTP/1.1, a request that took too long to arrive): a problem+json with its own
 * request id, like every other refusal, instead of Node's or Fastify's raw answer. The connection is closed after it.
 */
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { PROBLEM_BASE, PROBLEM_MEDIA_TYPE } from './problems.js';

/** Status, code and detail of a parser error (docs/http-api.md, "Conventions"). */
export function clientProblemOf(error: NodeJS.ErrnoException): { status: number; code: string; detail: string } {
  if (error.code === 'HPE_HEADER_OVERFLOW')
    return {
      status: 431,
      code: 'headers_too_large',
      detail: 'the request headers are larger than the server takes (16 KiB in all)',
    };
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT')
    return { status: 408, code: 'request_timeout', detail: 'the request did not arrive in time' };
  return { status: 400, code: 'invalid_request', detail: 'the request is not valid HTTP/1.1' };
}

/** The raw HTTP/1.1 answer of a parser error: a problem+json body, `x-request-id`, `connection: close`. */
export function clientErrorResponse(error: NodeJS.ErrnoException, requestId: string): string {
  const { status, code, detail } = clientProblemOf(error);
  const title = STATUS_CODES[status] ?? 'Client error'; // the status line's reason phrase, also the problem's title
  const body = JSON.stringify({
    type: `${PROBLEM_BASE}${code}`,
    title,
    status,
    detail,
    requestId,
    code,
    // The parser's own code only (a fixed name, e.g. HPE_INVALID_METHOD): never the bytes it refused.
    ...(code === 'invalid_request' ? { errors: [{ path: '', message: `${detail} (${String(error.code)})` }] } : {}),
  });
  return (
    `HTTP/1.1 ${status} ${title}\r\ncontent-type: ${PROBLEM_MEDIA_TYPE}\r\n` +
    `content-length: ${Buffer.byteLength(body)}\r\nx-request-id: ${requestId}\r\nconnection: close\r\n\r\n${body}`
  );
}

/** The server's `clientError` handler (Fastify's `clientErrorHandler` option), logging through `log`. */
export function clientErrorHandler(log: Pick<Logger, 'info'>) {
  return (error: NodeJS.ErrnoException, socket: Socket): void => {
    // A reset connection has no one to answer (Node's own rule).
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const requestId = randomUUID();
    const { status } = clientProblemOf(error);
    log.info({ requestId, status, parserError: error.code }, 'client error');
    // Node's rule too: never write a raw answer into a response already under way on this connection.
    const current = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    // Closed once the answer is out, whatever the client still sends.
    if (socket.writable && !current?.headersSent)
      socket.end(clientErrorResponse(error, requestId), () => socket.destroy());
    else socket.destroy();
  };
}
