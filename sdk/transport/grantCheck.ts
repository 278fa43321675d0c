import type { HostMethodName } from '../protocol/methods.js';
import { RpcError } from '../protocol/rpcError.js';
import type { WireBinding } from '../protocol/types.js';

/**
 * Is this request inside the run's grants? The binding the host sent in `run` is the
 * run's grants: a method must be listed in `hostRequests`, and a model, knowledge base or MCP
 * server/tool must be one of its handles. Returns the refusal, or undefined if granted.
 */
export function checkGrant(
  method: HostMethodName,
  params: Record<string, unknown>,
  binding: WireBinding,
  runId: string,
): RpcError | undefined {
  if (!binding.hostRequests.includes(method)) {
    return RpcError.policyDenied(`${method} is not granted to run ${runId}`, {
      deniedBy: 'binding.hostRequests',
      method,
    });
  }
  switch (method) {
    case 'model/complete': {
      const model = String(params.model);
      if (!binding.models.some((m) => m.id === model)) {
        return RpcError.policyDenied(`model "${model}" is not granted to run ${runId}`, {
          deniedBy: 'binding.models',
          method,
          model,
        });
      }
      return undefined;
    }
    case 'kb/retrieve': {
      const kb = String(params.knowledgeBase);
      if (!binding.knowledgeBases.some((k) => k.id === kb)) {
        return RpcError.policyDenied(`knowledge base "${kb}" is not granted to run ${runId}`, {
          deniedBy: 'binding.knowledgeBases',
          method,
          knowledgeBase: kb,
        });
      }
      return undefined;
    }
    case 'tool/list': {
      const serverId = String(params.server);
      if (!binding.mcpServers.some((s) => s.id === serverId)) {
        return RpcError.policyDenied(`MCP server "${serverId}" is not granted to run ${runId}`, {
          deniedBy: 'binding.mcpServers',
          method,
          server: serverId,
        });
      }
      return undefined;
    }
    case 'tool/call': {
      const serverId = String(params.server);
      const tool = String(params.tool);
      const server = binding.mcpServers.find((s) => s.id === serverId);
      if (!server) {
        return RpcError.policyDenied(`MCP server "${serverId}" is not granted to run ${runId}`, {
          deniedBy: 'binding.mcpServers',
          method,
          server: serverId,
        });
      }
      const refusal = toolRefusal(server, tool, runId);
      return refusal
        ? RpcError.policyDenied(refusal.message, { deniedBy: refusal.deniedBy, method, server: serverId, tool })
        : undefined;
    }
    default:
      return undefined;
  }
}

/** A granted MCP server's tool lists, as the run's binding carries them. */
export interface ToolLists {
  id: string;
  allowedTools?: string[];
  deniedTools: string[];
}

/**
 * May the run call this tool of a granted server? The one rule for SDK `tool/call` and the
 * host's MCP endpoint: the server's deny list wins, then the allow list (absent = all).
 */
export function toolRefusal(
  server: ToolLists,
  tool: string,
  runId: string,
): { deniedBy: string; message: string } | undefined {
  if (server.deniedTools.includes(tool))
    return {
      deniedBy: 'mcpServer.tools.deny',
      message: `tool "${tool}" of MCP server "${server.id}" is on the deny list`,
    };
  if (server.allowedTools && !server.allowedTools.includes(tool))
    return {
      deniedBy: 'binding.mcpServers.tools',
      message: `tool "${tool}" of MCP server "${server.id}" is not granted to run ${runId}`,
    };
  return undefined;
}
