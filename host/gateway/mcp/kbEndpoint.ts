import type { IncomingMessage, ServerResponse } from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Gateway } from '../gateway.js';
import { answerStateless } from './endpoint.js';
import { kbToolName } from './kbToolNames.js';
import { retrieveForRun } from '../kb/runRetrieve.js';
import type { GatewayRun } from '../runContext.js';

const MAX_TOP_K = 20;

/**
 * Serve one MCP request of a run's knowledge-base endpoint (streamable HTTP, stateless): one
 * `search_<kb>` tool per granted knowledge base, answered by the same retrieval, grant check,
 * redaction and `kb.retrieve` audit as the SDK's `kb/retrieve`.
 */
export async function serveKbMcpRequest(
  gateway: Gateway,
  run: GatewayRun,
  req: IncomingMessage,
  res: ServerResponse,
  body: unknown,
): Promise<void> {
  const byTool = new Map<string, (typeof run.access.knowledgeBases)[number]>();
  for (const kb of run.access.knowledgeBases) {
    // Two ids may map to one name (`a.b`, `a_b`): the later one gets a number, never hides the other.
    let name = kbToolName(kb.id);
    for (let i = 2; byTool.has(name); i += 1) name = `${kbToolName(kb.id)}_${i}`;
    byTool.set(name, kb);
  }
  const server = new Server({ name: 'paddock:knowledge-bases', version: '1' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [...byTool].map(([name, kb]) => ({
      name,
      description:
        `Search the knowledge base "${kb.name ?? kb.id}" (served by the paddock host). Returns the best ` +
        `matching passages, each with its source.`,
      inputSchema: {
        type: 'object' as const,
        properties: {
          query: { type: 'string', minLength: 1, description: 'What to look for' },
          topK: { type: 'integer', minimum: 1, maximum: MAX_TOP_K, description: 'How many passages (default 5)' },
        },
        required: ['query'],
        additionalProperties: false,
      },
    })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const kb = byTool.get(request.params.name);
    const args = (request.params.arguments ?? {}) as { query?: unknown; topK?: unknown };
    if (!kb)
      return {
        content: [
          { type: 'text' as const, text: `paddock: no knowledge base tool "${request.params.name}" for this run` },
        ],
        isError: true,
      };
    if (typeof args.query !== 'string' || !args.query.trim())
      return { content: [{ type: 'text' as const, text: 'paddock: query must be a non-empty string' }], isError: true };
    const topK =
      typeof args.topK === 'number' && Number.isInteger(args.topK) ? Math.min(Math.max(args.topK, 1), MAX_TOP_K) : 5;
    try {
      const chunks = await retrieveForRun(
        gateway,
        run,
        kb.id,
        args.query,
        topK,
        AbortSignal.any([extra.signal, run.signal]),
      );
      const text = chunks.length
        ? chunks
            .map(
              (c, i) =>
                `[${i + 1}] ${c.source.title ?? c.source.id}${c.source.uri ? ` <${c.source.uri}>` : ''}\n${c.text}`,
            )
            .join('\n\n')
        : 'no matching passages';
      return { content: [{ type: 'text' as const, text }], structuredContent: { chunks } };
    } catch (error) {
      return { content: [{ type: 'text' as const, text: `paddock: ${(error as Error).message}` }], isError: true };
    }
  });
  await answerStateless(server, req, res, body);
}
