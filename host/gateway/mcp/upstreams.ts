import { mkdirSync, rmSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import { toolRefusal } from '../../../sdk/transport/grantCheck.js';
import type { McpServerResource } from '../../bindings/schema.js';
import { hostModuleDirs } from '../../config/packageRoot.js';
import { prepareSandbox, type PreparedSandbox } from '../../sandbox/prepare.js';
import { chownTree, dedicatedIdentity, reachableBy } from '../../sandbox/runIdentityFiles.js';
import { readSecretRef } from '../../secrets/hostSecrets.js';
import type { Redactor } from '../../secrets/redactor.js';
import { Store } from '../../state/store.js';
import type { GatewayRun } from '../runContext.js';

/** A tool call's answer as MCP shapes it. */
export interface ToolResult {
  content: { type: string; [k: string]: unknown }[];
  isError: boolean;
  [k: string]: unknown;
}

interface Connection {
  client: Client;
  sandbox?: PreparedSandbox;
  workDir?: string;
}

/** What the upstream connections of a run need from the host. */
export interface UpstreamDeps {
  store: Store;
  redactor: Redactor;
  log: Logger;
  dataDir: string;
}

const CLIENT_INFO = { name: 'paddock-gateway', version: '1' };

/**
 * Host paths a sandboxed stdio server must read: folders of its absolute command and arguments, and paddock's
 * node_modules.
 */
function serverReadPaths(server: McpServerResource): string[] {
  const paths = new Set<string>(hostModuleDirs());
  for (const part of [server.command ?? '', ...server.args]) {
    if (!isAbsolute(part) || part.startsWith('/usr/')) continue;
    try {
      paths.add(statSync(part).isDirectory() ? part : dirname(part));
    } catch {
      /* not a path */
    }
  }
  return [...paths];
}

/**
 * The MCP servers granted to one run, connected on first use with the official SDK client: a
 * `command` server starts under the run's sandbox backend (own empty folder, no network, secrets
 * from references), a `url` server over streamable HTTP. Tool lists are filtered and calls
 * checked with the same rule as SDK `tool/call`; every call is audited; everything ends with the run.
 */
export class McpUpstreams {
  private readonly connections = new Map<string, Promise<Connection>>();
  private closed = false;

  constructor(
    private readonly run: GatewayRun,
    private readonly deps: UpstreamDeps,
  ) {}

  /** The tools the run may call on a granted server. */
  async listTools(serverId: string): Promise<Tool[]> {
    const handle = this.handle(serverId);
    const { client } = await this.connect(serverId);
    const { tools } = await client.listTools(undefined, {
      timeout: this.resource(serverId).timeoutMs,
      signal: this.run.signal,
    });
    // Names, descriptions and schemas come from the server: redacted like its results.
    return this.deps.redactor.value(tools.filter((t) => !toolRefusal(handle, t.name, this.run.claims.runId)));
  }

  /** Call a tool: refused without forwarding unless allowed; timed out; audited; redacted. */
  async callTool(
    serverId: string,
    tool: string,
    args: Record<string, unknown> | undefined,
    signal?: AbortSignal,
  ): Promise<ToolResult> {
    const started = Date.now();
    const handle = this.handle(serverId);
    const refusal =
      toolRefusal(handle, tool, this.run.claims.runId) ??
      (await this.run.toolGate?.(serverId, tool, args, signal ?? this.run.signal));
    if (refusal) {
      this.audit('mcp.denied', { server: serverId, tool, deniedBy: refusal.deniedBy, reason: refusal.message });
      return {
        content: [{ type: 'text', text: `paddock: ${refusal.message} (denied by ${refusal.deniedBy})` }],
        isError: true,
      };
    }
    const resource = this.resource(serverId);
    try {
      const { client } = await this.connect(serverId);
      // A call the host was paused in goes on when it resumes: none goes out once the lease may have run out.
      if (!this.deps.store.leaseHolds)
        // Not audited: the store may be what the lease was lost to, and the run is another host's to record.
        return {
          content: [{ type: 'text', text: `paddock: ${Store.LEASE_MAY_HAVE_RUN_OUT} (denied by host.lease)` }],
          isError: true,
        };
      const result = (await client.callTool({ name: tool, arguments: args ?? {} }, undefined, {
        timeout: resource.timeoutMs,
        signal: signal ? AbortSignal.any([signal, this.run.signal]) : this.run.signal,
      })) as ToolResult;
      const safe = this.deps.redactor.value({
        ...result,
        content: result.content ?? [],
        isError: result.isError === true,
      });
      this.audit('mcp.call', {
        server: serverId,
        tool,
        outcome: safe.isError ? 'error' : 'ok',
        latencyMs: Date.now() - started,
      });
      // A result of a server marked sensitive carries its data class into the run, error or not.
      if (resource.sensitive !== undefined) this.run.taint?.(resource.sensitive, `MCP tool ${serverId}/${tool}`);
      return safe;
    } catch (error) {
      const message = this.deps.redactor.text(error instanceof Error ? error.message : String(error));
      const timedOut = /timed out|timeout/i.test(message);
      this.audit('mcp.call', {
        server: serverId,
        tool,
        outcome: timedOut ? 'timeout' : 'failed',
        error: message,
        latencyMs: Date.now() - started,
      });
      return {
        content: [
          {
            type: 'text',
            text:
              `paddock: tool "${tool}" of MCP server "${serverId}" ` +
              `${timedOut ? `timed out after ${resource.timeoutMs} ms` : `failed: ${message}`}`,
          },
        ],
        isError: true,
      };
    }
  }

  /** Close every connection and stop every server process (the run ended). */
  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.connections.values()];
    this.connections.clear();
    await Promise.all(
      all.map(async (pending) => {
        const c = await pending.catch(() => undefined);
        if (!c) return;
        await c.client.close().catch(() => undefined);
        await c.sandbox?.containment?.killAll(2_000).catch(() => undefined);
        await c.sandbox?.containment?.release();
        if (c.workDir) rmSync(c.workDir, { recursive: true, force: true });
      }),
    );
  }

  private handle(serverId: string) {
    const handle = this.run.access.mcpServers.find((s) => s.id === serverId);
    if (!handle) throw new Error(`MCP server "${serverId}" is not granted to run ${this.run.claims.runId}`);
    return handle;
  }

  private resource(serverId: string): McpServerResource {
    const resource = this.run.resources.mcpServers.get(serverId);
    if (!resource) throw new Error(`MCP server "${serverId}" no longer exists`);
    return resource;
  }

  private audit(type: string, data: Record<string, unknown>): void {
    const { store } = this.deps;
    const { claims } = this.run;
    store.transaction(() =>
      store.audit.append({
        type,
        actor: `runner:${claims.runnerId}`,
        sessionId: claims.sessionId,
        runId: claims.runId,
        data,
      }),
    );
  }

  private connect(serverId: string): Promise<Connection> {
    if (this.closed) return Promise.reject(new Error('the run has ended'));
    let pending = this.connections.get(serverId);
    if (!pending) {
      pending = this.open(serverId);
      // A failed connection is forgotten so the next call tries again.
      pending.catch(() => this.connections.delete(serverId));
      this.connections.set(serverId, pending);
    }
    return pending;
  }

  private async open(serverId: string): Promise<Connection> {
    const resource = this.resource(serverId);
    // The MCP SDK loads with a run's first upstream connection, not with every host (docs/benchmarks.md).
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const client = new Client(CLIENT_INFO);
    if (resource.url) {
      const headers: Record<string, string> = {};
      for (const [name, ref] of Object.entries(resource.headers)) {
        const value = readSecretRef(ref);
        if (value === undefined)
          throw new Error(`header ${name} of MCP server "${serverId}": its reference is not readable on the host`);
        this.deps.redactor.add(value);
        headers[name] = value;
      }
      const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
      await client.connect(new StreamableHTTPClientTransport(new URL(resource.url), { requestInit: { headers } }), {
        timeout: resource.timeoutMs,
      });
      try {
        this.audit('mcp.connected', { server: serverId, transport: 'http' });
      } catch (error) {
        await client.close().catch(() => undefined); // not used unaudited, nor left open
        throw error;
      }
      return { client };
    }
    const env: Record<string, string> = { PATH: '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8' };
    for (const [name, ref] of Object.entries(resource.env)) {
      const value = readSecretRef(ref);
      if (value === undefined)
        throw new Error(`env ${name} of MCP server "${serverId}": its reference is not readable on the host`);
      this.deps.redactor.add(value);
      env[name] = value;
    }
    const workDir = join(this.deps.dataDir, 'mcp', `${this.run.claims.runId}-${serverId}`);
    mkdirSync(workDir, { recursive: true, mode: 0o700 });
    env.HOME = workDir;
    env.TMPDIR = workDir;
    const sandbox = prepareSandbox({
      backend: this.run.backend,
      runId: `${this.run.claims.runId}-mcp-${serverId}`,
      launch: { command: resource.command!, args: resource.args, cwd: workDir, env },
      workspace: workDir,
      readOnly: serverReadPaths(resource),
      binds: [],
      limits: this.run.sandboxLimits,
    });
    // Under a dedicated run uid the server's folder is its own, like a run's workspace.
    const ids = sandbox.identity && dedicatedIdentity(sandbox.identity);
    if (ids) {
      reachableBy(ids, workDir, this.deps.dataDir);
      chownTree(workDir, ids);
    }
    const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
    const transport = new StdioClientTransport({
      command: sandbox.launch.command,
      args: sandbox.launch.args,
      env: sandbox.launch.env,
      cwd: workDir,
      stderr: 'ignore',
    });
    try {
      await client.connect(transport, { timeout: resource.timeoutMs });
      // Inside the try: a server whose start cannot be audited is stopped, never left running unknown to close().
      this.audit('mcp.connected', {
        server: serverId,
        transport: 'stdio',
        backend: this.run.backend,
        command: resource.command,
        args: resource.args,
      });
    } catch (error) {
      await transport.close().catch(() => undefined);
      await sandbox.containment?.killAll(2_000).catch(() => undefined);
      await sandbox.containment?.release();
      rmSync(workDir, { recursive: true, force: true });
      throw error;
    }
    return { client, sandbox, workDir };
  }
}
