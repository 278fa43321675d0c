import { ErrorCodes } from '../../sdk/protocol/errorCodes.js';
import { RpcError } from '../../sdk/protocol/rpcError.js';
import type { HostRequestEntries } from '../rpc/hostRequestHandler.js';
import { isRefusal, type Gateway, type GatewayRunHandle } from './gateway.js';
import { callModel, findGrantedModel } from './modelCall.js';
import { toWire } from './modelComplete.js';
import { KbRefusal, retrieveForRun } from './kb/runRetrieve.js';

/**
 * Answers the SDK's gateway requests — `model/complete`, `kb/retrieve`, `tool/list`, `tool/call` —
 * for one run, through the same paths as the HTTP endpoints (the endpoint already checked the
 * grant). A run without a gateway (nothing granted through it) gets no entries.
 */
export function gatewayRequests(gateway: Gateway, handle: GatewayRunHandle | undefined): HostRequestEntries {
  if (!handle) return {};
  const { run } = handle;
  return {
    'model/complete': async (params, scope) => {
      const method = 'model/complete';
      const model = findGrantedModel(run, params.model);
      if (!model)
        throw RpcError.policyDenied(`model "${String(params.model)}" is not granted`, {
          deniedBy: 'binding.models',
          method,
        });
      const format = gateway.formatFor(model);
      const streamId = typeof params.streamId === 'string' ? params.streamId : undefined;
      const answer = await callModel(gateway.callDeps, run, {
        endpoint: 'model/complete',
        format,
        body: toWire(format, params, model.id),
        signal: scope.signal,
        onText: streamId ? (text) => scope.notify('model/delta', { runId: scope.runId, streamId, text }) : undefined,
      });
      if (isRefusal(answer)) {
        const code = answer.deniedBy?.startsWith('binding.limits.')
          ? ErrorCodes.QuotaExceeded
          : answer.deniedBy
            ? ErrorCodes.PolicyDenied
            : ErrorCodes.UpstreamFailed;
        throw new RpcError(code, answer.message, {
          status: answer.status,
          ...(answer.deniedBy ? { deniedBy: answer.deniedBy } : {}),
        });
      }
      let errorText = '';
      for await (const chunk of answer.body) if (answer.status >= 400 && errorText.length < 1000) errorText += chunk;
      const reply = await answer.done;
      if (answer.status >= 400)
        throw new RpcError(
          ErrorCodes.UpstreamFailed,
          `model "${model.id}" answered HTTP ${answer.status}: ${errorText.slice(0, 300)}`,
          { status: answer.status },
        );
      return {
        message: {
          role: 'assistant',
          content: reply.content.map((b) =>
            b.type === 'text' ? b : { type: 'tool_use', id: b.id, name: b.name, input: b.input },
          ),
        },
        stopReason: reply.stopReason,
        usage: {
          inputTokens: reply.usage.inputTokens,
          outputTokens: reply.usage.outputTokens,
          model: model.id,
          ...(model.pricing ? { costUsd: gateway.costOf(model, reply.usage) } : {}),
        },
        model: model.id,
        ...(model.provider === 'scripted' ? { scripted: true } : {}),
      };
    },
    'kb/retrieve': async (params, scope) => {
      const id = String(params.knowledgeBase);
      const topK = typeof params.topK === 'number' ? params.topK : 5;
      try {
        return { chunks: await retrieveForRun(gateway, run, id, String(params.query), topK, scope.signal) };
      } catch (error) {
        if (error instanceof KbRefusal && error.deniedBy)
          throw RpcError.policyDenied(error.message, { deniedBy: error.deniedBy, method: 'kb/retrieve' });
        throw new RpcError(ErrorCodes.UpstreamFailed, gateway.redact((error as Error).message), { knowledgeBase: id });
      }
    },
    'tool/list': async (params) => {
      const server = String(params.server);
      try {
        const tools = await handle.upstreams.listTools(server);
        return {
          tools: tools.map((t) => ({
            name: t.name,
            ...(t.description ? { description: t.description } : {}),
            inputSchema: t.inputSchema as Record<string, unknown>,
          })),
        };
      } catch (error) {
        throw new RpcError(
          ErrorCodes.UpstreamFailed,
          `MCP server "${server}": ${gateway.redact(error instanceof Error ? error.message : String(error))}`,
          { server },
        );
      }
    },
    'tool/call': async (params, scope) => {
      const args = (params.arguments ?? {}) as Record<string, unknown>;
      return handle.upstreams.callTool(String(params.server), String(params.tool), args, scope.signal);
    },
  };
}
