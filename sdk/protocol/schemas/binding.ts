import { z } from 'zod';
import { IdSchema } from './common.js';

const ModelRefSchema = z.looseObject({
  id: IdSchema,
  name: z.string().optional(),
  provider: z.string().optional(),
  model: z.string().optional(),
});
const KnowledgeBaseRefSchema = z.looseObject({ id: IdSchema, name: z.string().optional() });
const McpServerRefSchema = z.looseObject({
  id: IdSchema,
  name: z.string().optional(),
  /** Tools this run may call; absent means every tool the server lists except `deniedTools`. */
  allowedTools: z.array(z.string().min(1)).optional(),
  /** Tools this run may never call. */
  deniedTools: z.array(z.string().min(1)).default([]),
});
const MountRefSchema = z.looseObject({
  id: IdSchema,
  /** Where the mount appears inside the run's workspace. */
  path: z.string(),
  readOnly: z.boolean(),
});
const SkillRefSchema = z.looseObject({
  id: IdSchema,
  name: z.string().min(1),
  version: z.string().optional(),
  path: z.string().optional(),
  /** `sha256:…` of the skill's content as the run got it. */
  digest: z.string().optional(),
  /** The content differs from what the admin applied (the host flags it in the audit log). */
  changed: z.boolean().optional(),
});
/** Where the run reaches the host gateway; the run token is in the runner's env (`PADDOCK_RUN_TOKEN`), never here. */
const GatewayRefSchema = z.looseObject({
  /** Base URL of the gateway as reachable from inside the run's sandbox. */
  baseUrl: z.string(),
  /** For Anthropic clients (`ANTHROPIC_BASE_URL`): the client appends `/v1/messages`. */
  anthropicBaseUrl: z.string(),
  /** For OpenAI clients (a provider `base_url`): ends in `/v1`. */
  openaiBaseUrl: z.string(),
  /** The run's MCP endpoint (streamable HTTP) of each granted MCP server, by server id. */
  mcp: z.record(z.string(), z.string()).default({}),
  /** Name of the environment variable that holds the run token. */
  tokenEnv: z.string().default('PADDOCK_RUN_TOKEN'),
});
const ArtifactRefSchema = z.looseObject({
  id: IdSchema,
  name: z.string().min(1),
  path: z.string().optional(),
  mimeType: z.string().optional(),
  size: z.int().nonnegative().optional(),
});
/**
 * One earlier turn of the conversation, as the host projects it when the binding grants history
 * (`grants.history`): a user message or the runner's completed answer, redacted, this session only.
 */
export const HistoryMessageSchema = z.looseObject({
  role: z.enum(['user', 'assistant']),
  text: z.string(),
  at: z.string().optional(),
});

/** Limits that apply to the run, told to the runner so it can plan (the host enforces them). */
export const RunLimitsSchema = z
  .looseObject({
    wallClockMs: z.int().positive().optional(),
    idleMs: z.int().positive().optional(),
    maxTurns: z.int().positive().optional(),
    maxUpdates: z.int().positive().optional(),
    maxEventBytes: z.int().positive().optional(),
    /** Bytes of the workspace and of the session folder, each (writes past it fail with ENOSPC). */
    diskBytes: z.int().positive().optional(),
    /** Files and directories of the workspace and of the session folder, each. */
    inodes: z.int().positive().optional(),
    maxLineBytes: z.int().positive().optional(),
  })
  .meta({ id: 'RunLimits' });

/**
 * The binding as projected for one run: validated runner config plus handles to granted
 * resources only. It never carries a secret or a host path outside the run's workspace.
 */
export const WireBindingSchema = z
  .looseObject({
    bindingId: IdSchema,
    runner: z.looseObject({ id: IdSchema, version: z.string().optional() }),
    config: z.record(z.string(), z.unknown()).default({}),
    /** Host request methods this run may call (e.g. `state/get`); anything else is refused. */
    hostRequests: z.array(z.string()).default([]),
    models: z.array(ModelRefSchema).default([]),
    knowledgeBases: z.array(KnowledgeBaseRefSchema).default([]),
    mcpServers: z.array(McpServerRefSchema).default([]),
    skills: z.array(SkillRefSchema).default([]),
    artifacts: z.array(ArtifactRefSchema).default([]),
    mounts: z.array(MountRefSchema).default([]),
    /** Where `state/*` keeps this run's keys: per binding and session, or per binding. */
    stateScope: z.enum(['session', 'binding']).optional(),
    /** Earlier turns of this conversation, oldest first (empty unless the binding grants history). */
    history: z.array(HistoryMessageSchema).default([]),
    /** Present when the run has a model, knowledge base or MCP server granted (docs/gateway.md). */
    gateway: GatewayRefSchema.optional(),
    workspace: z
      .looseObject({
        root: z.string(),
        in: z.string(),
        out: z.string(),
        tmp: z.string(),
        /** The session's folder: kept across the session's runs (a harness's resume state lives here). */
        session: z.string().optional(),
      })
      .optional(),
    limits: RunLimitsSchema.default({}),
  })
  .meta({ id: 'WireBinding', description: 'What one run may touch: config plus granted handles.' });
