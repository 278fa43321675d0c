import type { RunAccess, ResourceIndex } from '../authz/runAccess.js';
import type { BindingLimits } from '../bindings/schema.js';
import type { Backend, SandboxLimits } from '../sandbox/backend.js';
import type { RunTokenClaims } from './runTokens.js';

/** The model budgets of a binding (docs/gateway.md, "Budgets"). */
export type ModelBudget = Pick<
  BindingLimits,
  'modelTokensPerRun' | 'modelCostPerRunUsd' | 'modelTokensPerDay' | 'modelCostPerDayUsd'
>;

/** What the gateway knows about one open run. */
export interface GatewayRun {
  claims: RunTokenClaims;
  /** The tenant of the run's binding: its circuit breakers are its own (docs/gateway.md, "Retries and the …"). */
  tenant: string;
  /** The run's grants (models and MCP servers with their tool lists). */
  access: Pick<RunAccess, 'models' | 'mcpServers' | 'knowledgeBases'>;
  /** Resources as they were when the run started. */
  resources: ResourceIndex;
  budget: ModelBudget;
  /** Sandbox backend of the run (MCP stdio servers start under the same one). */
  backend: Backend;
  /** The run's resource limits (MCP stdio servers get the same). */
  sandboxLimits: SandboxLimits;
  /** Tell the run (and the chat) something the host decided, as a `log` update. */
  notice(level: 'info' | 'warn' | 'error', message: string): void;
  /**
   * The run's policy over MCP tool calls (set by the run pipeline once the run's policy exists): undefined lets the
   * call go, a refusal is answered as an `isError` result naming who denied it.
   */
  toolGate?(
    server: string,
    tool: string,
    args: Record<string, unknown> | undefined,
    signal?: AbortSignal,
  ): Promise<{ deniedBy: string; message: string } | undefined>;
  /**
   * The run read something sensitive the host saw: a secret value in a model request (replaced before it was sent),
   * a result of an MCP server or knowledge base marked `sensitive`. The run's policy taints the run with the data
   * class (docs/approvals.md §6). Set by the run pipeline.
   */
  taint?(dataClass: string, source: string): void;
  /** Aborted when the run's token is revoked (its result line, or its end): in-flight calls stop. */
  signal: AbortSignal;
  /** Hears each model call once it is recorded and its reservation settled (tests, metrics). */
  onCallRecorded?(call: {
    status: number;
    inputTokens: number;
    outputTokens: number;
    costUsd: number;
    error?: string;
    deniedBy?: string;
  }): void;
}
