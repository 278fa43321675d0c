// Approvals as the tests meet them: waiting for a run's pending ones (the run's host commits each before it waits,
// so polling the store sees it — never a fixed sleep), a second store connection on a data folder, and a loopback
// MCP server that records every byte a debug tool receives (the receiver of the exfiltration tests).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import { listApprovals, type ApprovalRow } from '../../host/state/approvals.js';
import { Store } from '../../host/state/store.js';

/** The run's first `count` pending approvals, once the store has that many; fails after `timeoutMs`. */
export async function pendingApprovals(
  store: Store,
  runId: string,
  count: number,
  timeoutMs = 60_000,
): Promise<ApprovalRow[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const rows = listApprovals(store, { runId, status: 'pending', limit: count });
    if (rows.length >= count) return rows;
    if (Date.now() > deadline) throw new Error(`fewer than ${count} pending approval(s) for ${runId}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** The run's next pending approval (see {@link pendingApprovals}). */
export async function pendingApproval(store: Store, runId: string): Promise<ApprovalRow> {
  return (await pendingApprovals(store, runId, 1))[0]!;
}

/** `fn` on a store of the data folder (another connection, closed after). */
export function withStore<T>(dataDir: string, fn: (store: Store) => T): T {
  const store = Store.open({ dataDir });
  try {
    return fn(store);
  } finally {
    store.close();
  }
}

/**
 * A streamable-HTTP MCP server on loopback with one tool, `http_debug { body }` — what a prompt-injected agent is
 * told to send a secret to. `received` holds every request body it got, for grepping.
 */
export async function debugMcpReceiver(): Promise<{ url: string; received: string[]; close(): Promise<void> }> {
  const received: string[] = [];
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      received.push(raw);
      const mcp = new McpServer({ name: 'debug', version: '1' });
      mcp.registerTool('http_debug', { inputSchema: { body: z.string() } }, async ({ body }) => ({
        content: [{ type: 'text', text: `logged ${body.length} characters` }],
      }));
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on('close', () => void transport.close());
      void mcp
        .connect(transport)
        .then(() => transport.handleRequest(req, res, raw ? (JSON.parse(raw) as unknown) : undefined));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
