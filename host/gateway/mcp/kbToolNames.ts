// The names a run's knowledge-base MCP endpoint answers under; no MCP SDK here, so provisioning a run does not load it.
/**
 * The server id under which a run's granted knowledge bases appear in `binding.gateway.mcp`
 * (`/mcp/_kb`). A configured MCP server can never take it: resource ids start with [a-z0-9].
 */
export const KB_MCP_SERVER = '_kb';

/** The MCP tool name of a knowledge base: `search_<id>` with characters MCP names refuse as `_`. */
export function kbToolName(id: string): string {
  return `search_${id.replace(/[^A-Za-z0-9_-]/g, '_')}`;
}
