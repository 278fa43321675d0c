import type { IncomingMessage, ServerResponse } from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { McpUpstreams } from './upstreams.js';

/**
 * Serve one MCP request of a run for one granted server (streamable HTTP, stateless): a fresh
 * MCP server object per request whose `tools/list` and `tools/call` go to the run's upstream
 * connection through the host's checks. The harness sees only the allowed tools.
 */
export async function serveMcpRequest(
  upstreams: McpUpstreams,
  serverId: string,
  req: IncomingMessage,
  res: ServerResponse,
  body: unknown,
): Promise<void> {
  const server = new Server({ name: `paddock:${serverId}`, version: '1' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: await upstreams.listTools(serverId) }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) =>
    upstreams.callTool(serverId, request.params.name, request.params.arguments, extra.signal),
  );
  await answerStateless(server, req, res, body);
}

/**
 * Answer one request with a per-request MCP server over stateless streamable HTTP (JSON responses), closed with the
 * response.
 */
export async function answerStateless(
  server: Server,
  req: IncomingMessage,
  res: ServerResponse,
  body: unknown,
): Promise<void> {
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on('close', () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
}
