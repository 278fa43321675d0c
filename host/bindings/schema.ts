import { isAbsolute } from 'node:path';
import { z } from 'zod';
import { EffectSchema } from '../../sdk/protocol/schemas/common.js';
import { RunLimitOverridesSchema } from '../plugins/manifest.js';
import { DEFAULT_TENANT, TENANT_PATTERN } from '../config/tenant.js';

const ObjectId = z
  .string()
  .regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, 'lowercase letters, digits, ".", "_" and "-" (at most 64)');
const AbsolutePath = z.string().refine((p) => isAbsolute(p), 'must be an absolute path');
/** The tenant an object belongs to (docs/http-api.md, "Tokens, tenants, roles"). */
export const TenantSchema = z
  .string()
  .regex(TENANT_PATTERN, 'a tenant name: lowercase letters, digits, "_" and "-" (at most 63, no leading "_" or "-")')
  .default(DEFAULT_TENANT)
  .describe('The tenant this object belongs to; a binding may grant only resources of its own tenant.');

/** Where a secret is read from at use time. The configuration never holds the secret itself. */
export const SecretRefSchema = z.union([
  z.strictObject({ env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name') }),
  z.strictObject({ file: AbsolutePath }),
]);

/** One rule of a scripted model: when the last user text matches, answer like this (docs/gateway.md). */
export const ScriptRuleSchema = z
  .strictObject({
    /** A regular expression tested against the last user message (or tool result) text. */
    match: z
      .string()
      .min(1)
      .refine((r) => {
        try {
          new RegExp(r);
          return true;
        } catch {
          return false;
        }
      }, 'not a valid regular expression'),
    reply: z.string().optional(),
    tool: z.strictObject({ name: z.string().min(1), input: z.record(z.string(), z.unknown()).default({}) }).optional(),
    /** Answer with this HTTP status instead (429, 500, 529 …), for the first `times` attempts. */
    error: z
      .int()
      .min(400)
      .max(599)
      .optional()
      .describe('Answer with this HTTP status instead (429, 500, 529 …), for the first `times` attempts.'),
    times: z.int().positive().optional(),
    delayMs: z.int().nonnegative().max(600_000).optional(),
    /** Stream the reply in this many chunks. */
    chunks: z.int().positive().max(100_000).optional().describe('Stream the reply in this many chunks.'),
    /** Wait this long between streamed chunks. */
    chunkDelayMs: z.int().nonnegative().max(60_000).optional().describe('Wait this long between streamed chunks.'),
  })
  .refine((r) => [r.reply, r.tool, r.error].filter((x) => x !== undefined).length <= 1, {
    message: 'give at most one of reply, tool, error',
    path: ['reply'],
  });

/** A model the host gateway can call. */
export const ModelResourceSchema = z
  .strictObject({
    id: ObjectId,
    tenant: TenantSchema,
    name: z.string().optional(),
    /** `scripted` is the built-in deterministic model for tests and the offline demo. */
    provider: z
      .enum(['anthropic', 'openai', 'scripted'])
      .describe('`scripted` is the built-in deterministic model for tests and the offline demo.'),
    /** The provider's model name, sent upstream. */
    model: z.string().min(1),
    /** Upstream base URL (Anthropic: without `/v1`; OpenAI: with `/v1`). Defaults to the vendor's. */
    baseUrl: z.url().optional(),
    /** OpenAI-compatible providers: which API the upstream speaks. */
    api: z
      .enum(['responses', 'chat'])
      .optional()
      .describe('OpenAI-compatible providers: which API the upstream speaks.'),
    apiKey: SecretRefSchema.optional(),
    /** USD per million tokens; without it the model's calls count tokens but no cost. */
    pricing: z
      .strictObject({ inputPerMTokUsd: z.number().nonnegative(), outputPerMTokUsd: z.number().nonnegative() })
      .optional(),
    /** Retries of a 429/5xx/connection error before the answer reaches the harness. */
    maxRetries: z
      .int()
      .min(0)
      .max(10)
      .default(3)
      .describe('Retries of a 429/5xx/connection error before the answer reaches the harness.'),
    /** Upstream request timeout (to the first byte). */
    timeoutMs: z.int().positive().default(120_000).describe('Upstream request timeout (to the first byte).'),
    /** Scripted provider only: rules tried before the built-in directives. */
    script: z
      .array(ScriptRuleSchema)
      .optional()
      .describe('Scripted provider only: rules tried before the built-in directives.'),
  })
  .refine((m) => m.provider === 'scripted' || m.script === undefined, {
    message: 'only a scripted model has a script',
    path: ['script'],
  })
  .refine((m) => m.provider === 'openai' || m.api === undefined, {
    message: 'only an openai model has an api',
    path: ['api'],
  })
  .refine((m) => m.provider === 'scripted' || m.apiKey !== undefined, {
    message: 'a provider model needs apiKey ({env} or {file})',
    path: ['apiKey'],
  });
/** A data class a resource's results carry (`personal`, …): what a run reading them is tainted with. */
const SensitiveSchema = z
  .string()
  .regex(/^[a-z][a-z0-9-]{0,31}$/, 'a data class: lower-case letters, digits and -, at most 32 characters')
  .describe(
    'The data class its results carry (e.g. personal, confidential): a run that reads them is tainted with it, so ' +
      'every send out needs a one-time approval.',
  );
/** A knowledge base the host retrieves from: a folder it indexes, or an HTTP retriever. */
export const KnowledgeBaseResourceSchema = z
  .strictObject({
    id: ObjectId,
    tenant: TenantSchema,
    name: z.string().optional(),
    description: z.string().optional(),
    /** A folder of Markdown / text documents, indexed with SQLite FTS5. */
    path: AbsolutePath.optional().describe('A folder of Markdown / text documents, indexed with SQLite FTS5.'),
    /** An HTTP retriever: `POST {query, topK}` → `{chunks}`. */
    url: z.url().optional().describe('An HTTP retriever: `POST {query, topK}` → `{chunks}`.'),
    apiKey: SecretRefSchema.optional(),
    timeoutMs: z.int().positive().default(15_000),
    /** Its chunks carry this data class: a run that retrieves any is tainted with it (docs/approvals.md §6). */
    sensitive: SensitiveSchema.optional(),
  })
  .refine((k) => (k.path === undefined) !== (k.url === undefined), {
    message: 'give exactly one of path or url',
    path: ['path'],
  });
/** An MCP server the host proxies, with its own tool allow/deny lists. */
export const McpServerResourceSchema = z
  .strictObject({
    id: ObjectId,
    tenant: TenantSchema,
    name: z.string().optional(),
    command: z.string().min(1).optional(),
    args: z.array(z.string()).default([]),
    url: z.url().optional(),
    /** Environment of a `command` server, each value read from a reference by the host. */
    env: z
      .record(z.string(), SecretRefSchema)
      .default({})
      .describe('Environment of a `command` server, each value read from a reference by the host.'),
    /** HTTP headers of a `url` server (e.g. `Authorization`), each value read from a reference. */
    headers: z
      .record(z.string(), SecretRefSchema)
      .default({})
      .describe('HTTP headers of a `url` server (e.g. `Authorization`), each value read from a reference.'),
    /** A tool call that takes longer is abandoned with an error. */
    timeoutMs: z.int().positive().default(30_000).describe('A tool call that takes longer is abandoned with an error.'),
    tools: z
      .strictObject({
        /** Tools that may be called at all; omitted means every tool the server lists. */
        allow: z
          .array(z.string().min(1))
          .optional()
          .describe('Tools that may be called at all; omitted means every tool the server lists.'),
        deny: z.array(z.string().min(1)).default([]),
      })
      .default({ deny: [] }),
    /** Its tools' results carry this data class: a run that gets one is tainted with it (docs/approvals.md §6). */
    sensitive: SensitiveSchema.optional(),
  })
  .refine((s) => (s.command === undefined) !== (s.url === undefined), {
    message: 'give exactly one of command or url',
    path: ['command'],
  });
/** A skill: a directory with a SKILL.md. */
export const SkillResourceSchema = z.strictObject({
  id: ObjectId,
  tenant: TenantSchema,
  name: z.string().min(1),
  description: z.string().optional(),
  path: AbsolutePath,
});
/** A file handed to runs (copied into the workspace). */
export const ArtifactResourceSchema = z.strictObject({
  id: ObjectId,
  tenant: TenantSchema,
  name: z.string().min(1),
  path: AbsolutePath,
});
/** A host directory a run may see, under an allowlisted root. */
export const MountResourceSchema = z.strictObject({
  id: ObjectId,
  tenant: TenantSchema,
  path: AbsolutePath,
  mode: z.enum(['ro', 'rw']).default('ro'),
});

/** Resource schemas by kind, in the order `apply` and `export` use. */
export const RESOURCE_SCHEMAS = {
  models: ModelResourceSchema,
  knowledgeBases: KnowledgeBaseResourceSchema,
  mcpServers: McpServerResourceSchema,
  skills: SkillResourceSchema,
  artifacts: ArtifactResourceSchema,
  mounts: MountResourceSchema,
} as const;

/** A resource of any kind, parsed. */
export type ModelResource = z.infer<typeof ModelResourceSchema>;
export type ScriptRule = z.infer<typeof ScriptRuleSchema>;
export type KnowledgeBaseResource = z.infer<typeof KnowledgeBaseResourceSchema>;
export type SkillResource = z.infer<typeof SkillResourceSchema>;
export type McpServerResource = z.infer<typeof McpServerResourceSchema>;
export type MountResource = z.infer<typeof MountResourceSchema>;

const McpGrantSchema = z.union([
  ObjectId,
  z.strictObject({ id: ObjectId, tools: z.array(z.string().min(1)).optional() }),
]);

/** What a binding grants its runs. Every field defaults to nothing. */
export const GrantsSchema = z.strictObject({
  state: z.enum(['none', 'session', 'binding']).default('none'),
  models: z.array(ObjectId).default([]),
  knowledgeBases: z.array(ObjectId).default([]),
  mcpServers: z.array(McpGrantSchema).default([]),
  skills: z.array(ObjectId).default([]),
  artifacts: z.array(ObjectId).default([]),
  mounts: z.array(ObjectId).default([]),
  fs: z.enum(['none', 'read', 'readwrite']).default('none'),
  approval: z.boolean().default(false),
  /**
   * Earlier turns of the conversation the run receives in `binding.history` (redacted; this
   * session only): `none`, or a window of the last `messages` and/or at most `tokens` (≈ 4
   * characters a token) of user messages and the runner's completed answers.
   */
  history: z
    .union([
      z.literal('none'),
      z
        .strictObject({
          messages: z.int().min(1).max(1_000).optional(),
          tokens: z.int().min(1).max(1_000_000).optional(),
        })
        .refine((w) => w.messages !== undefined || w.tokens !== undefined, 'give messages, tokens or both (or "none")'),
    ])
    .default('none'),
});
/** Parsed grants. */
export type Grants = z.infer<typeof GrantsSchema>;

/** Which events a binding takes. An omitted field matches anything; more fields = more specific. */
export const RouteSchema = z.strictObject({
  platform: z.string().min(1).optional(),
  bot: z.string().min(1).optional(),
  conversation: z
    .strictObject({
      type: z.enum(['private', 'group', 'channel', 'thread']).optional(),
      id: z.string().min(1).optional(),
    })
    .default({}),
  eventTypes: z.array(z.string().min(1)).min(1).default(['message']),
});
/** A parsed route. */
export type Route = z.infer<typeof RouteSchema>;

/** Limits of a binding: per-run limits plus queueing, concurrency and request rate. */
export const BindingLimitsSchema = RunLimitOverridesSchema.extend({
  /** Runs of this binding at once, over all its sessions. */
  maxConcurrentRuns: z.int().positive().default(4).describe('Runs of this binding at once, over all its sessions.'),
  /** Runner processes kept started and initialized for this binding's next runs (docs/warm-pool.md); 0: none. */
  warmPool: z
    .int()
    .nonnegative()
    .max(16)
    .default(0)
    .describe(
      "Runner processes kept started and initialized for this binding's next runs, each used for one run " +
        '(process sandbox, no gateway grants; docs/warm-pool.md). 0: every run starts its runner cold.',
    ),
  /** Messages waiting per session behind its active run; one more is refused. */
  maxQueued: z
    .int()
    .nonnegative()
    .default(8)
    .describe('Messages waiting per session behind its active run; one more is refused.'),
  /** Runner → host requests per second per run (token bucket, burst = 2 × rate). */
  requestsPerSecond: z
    .number()
    .positive()
    .default(50)
    .describe('Runner → host requests per second per run (token bucket, burst = 2 × rate).'),
  /** Runner → host requests per run in total. */
  maxRequests: z.int().positive().default(10_000).describe('Runner → host requests per run in total.'),
  /** Largest runner → host request line. */
  maxRequestBytes: z
    .int()
    .positive()
    .default(1024 * 1024)
    .describe('Largest runner → host request line.'),
  /** Model tokens (input + output) of one run, through the gateway. */
  modelTokensPerRun: z
    .int()
    .positive()
    .default(1_000_000)
    .describe('Model tokens (input + output) of one run, through the gateway.'),
  /** Model cost of one run in USD (priced models only). */
  modelCostPerRunUsd: z.number().positive().optional().describe('Model cost of one run in USD (priced models only).'),
  /** Model tokens of all runs of this binding in the last 24 hours. */
  modelTokensPerDay: z
    .int()
    .positive()
    .optional()
    .describe('Model tokens of all runs of this binding in the last 24 hours.'),
  /** Model cost of all runs of this binding in the last 24 hours, in USD. */
  modelCostPerDayUsd: z
    .number()
    .positive()
    .optional()
    .describe('Model cost of all runs of this binding in the last 24 hours, in USD.'),
});
/** Parsed binding limits. */
export type BindingLimits = z.infer<typeof BindingLimitsSchema>;

/**
 * One rule of a binding's approval policy (docs/approvals.md, "Rules"): an effect (or `*`), exactly one match, and a
 * decision. A matching `deny` always wins; otherwise the most specific matching `ask`/`allow` decides.
 */
export const PolicyRuleSchema = z
  .strictObject({
    effect: z.enum([...EffectSchema.options, '*']),
    match: z
      .strictObject({
        path: z.string().min(1).max(4096).optional(),
        domain: z.string().min(1).max(253).optional(),
        command: z.string().min(1).max(4096).optional(),
        tool: z.string().min(1).max(256).optional(),
      })
      .refine((m) => Object.values(m).filter((v) => v !== undefined).length === 1, {
        message: 'give exactly one of path, domain, command, tool',
      }),
    decision: z.enum(['allow', 'ask', 'deny']),
    why: z.string().max(500).optional(),
  })
  .describe('One approval rule: an effect (or *), one match (path, domain, command or tool) and a decision.');
/** A parsed policy rule. */
export type PolicyRuleInput = z.infer<typeof PolicyRuleSchema>;

/** A binding: route → runner, with its config, grants, limits and policies. */
export const BindingSchema = z.strictObject({
  id: ObjectId,
  /** Only events dispatched for this tenant route here; its sessions record it. */
  tenant: TenantSchema,
  description: z.string().optional(),
  runner: z.string().min(1),
  route: RouteSchema.default({ conversation: {}, eventTypes: ['message'] }),
  config: z.record(z.string(), z.unknown()).default({}),
  grants: GrantsSchema.default(GrantsSchema.parse({})),
  limits: BindingLimitsSchema.default(BindingLimitsSchema.parse({})),
  workspace: z.enum(['copy', 'mount']).default('copy'),
  /** Sandbox profile; a profile this host cannot run is refused at dispatch (fails closed). */
  sandbox: z
    .enum(['process', 'bwrap'])
    .default('bwrap')
    .describe('Sandbox profile; a profile this host cannot run is refused at dispatch (fails closed).'),
  /**
   * Network of a sandboxed run: none, unless destinations are allowed here; they are reached
   * through the host's egress proxy, which resolves names itself and audits every destination.
   */
  network: z
    .strictObject({
      /** `host`, `host:port`, `*.domain` (not the apex), `*.domain:port`; a bare host means ports 80 and 443. */
      egress: z
        .array(z.string().regex(/^(\*\.)?[A-Za-z0-9.-]+(:\d{1,5})?$/, 'a host, host:port or *.domain'))
        .default([])
        .describe(
          '`host`, `host:port`, `*.domain` (not the apex), `*.domain:port`; a bare host means ports 80 and 443.',
        ),
      /** Allow destinations that resolve to loopback, private or link-local addresses. */
      allowPrivate: z
        .boolean()
        .default(false)
        .describe('Allow destinations that resolve to loopback, private or link-local addresses.'),
    })
    .default({ egress: [], allowPrivate: false }),
  /**
   * Host paths the run may read (bound read-only under bwrap), e.g. the program of an ACP agent.
   * Each must lie under an allowed mount root, like mounts; checked at apply and at run start.
   */
  readPaths: z.array(AbsolutePath).default([]),
  /** Run anyway, with less isolation, when the backend or a limit is missing here (audited, shown by explain). */
  allowDegrade: z
    .boolean()
    .default(false)
    .describe(
      'Run anyway, with less isolation, when the backend or a limit is missing here (audited, shown by explain).',
    ),
  /** `deny`: every `ask` of the policy is denied (nothing waits for a person); `ask`: asks reach approvers. */
  approvalPolicy: z
    .enum(['ask', 'deny'])
    .default('deny')
    .describe('deny: every ask of the policy is denied (nothing waits for a person); ask: asks reach approvers.'),
  /** The binding's approval rules (docs/approvals.md); none: the defaults and the host's floors decide. */
  policy: z.array(PolicyRuleSchema).max(256).default([]),
  /** How long an approval waits for a person before it expires and the action is denied (default 5 min). */
  approvalTimeoutMs: z
    .int()
    .min(1_000)
    .max(24 * 3_600_000)
    .default(300_000)
    .describe('How long an approval waits for a person before it expires and the action is denied.'),
  /**
   * A message that arrives while the session's run is busy: `queue` waits its turn; `interrupt` (earlier name
   * `restart`) cancels the running and waiting runs at their next safe point and starts a run under a new goal
   * revision; `append` delivers it to the running run where its runner takes messages mid-run (Claude Code), else it
   * waits its turn like `queue` (docs/approvals.md, "Steering").
   */
  steering: z
    .enum(['queue', 'interrupt', 'restart', 'append'])
    .default('queue')
    .describe(
      'queue: a new message waits its turn; interrupt (earlier name restart): it cancels the running and waiting ' +
        'runs and starts under a new goal revision; append: it is delivered to the running run when its runner ' +
        'takes messages mid-run (claude-code), else it waits its turn as with queue.',
    ),
  enabled: z.boolean().default(true),
});
/** A parsed binding. */
export type Binding = z.infer<typeof BindingSchema>;
/** A binding as written in a file. */
export type BindingInput = z.input<typeof BindingSchema>;

/** `paddock.yaml`: resources by kind, and bindings. */
export const ConfigFileSchema = z.strictObject({
  resources: z
    .strictObject({
      models: z.array(ModelResourceSchema).default([]),
      knowledgeBases: z.array(KnowledgeBaseResourceSchema).default([]),
      mcpServers: z.array(McpServerResourceSchema).default([]),
      skills: z.array(SkillResourceSchema).default([]),
      artifacts: z.array(ArtifactResourceSchema).default([]),
      mounts: z.array(MountResourceSchema).default([]),
    })
    .default({ models: [], knowledgeBases: [], mcpServers: [], skills: [], artifacts: [], mounts: [] }),
  bindings: z.array(BindingSchema).default([]),
});
/** A parsed configuration file. */
export type ConfigFile = z.infer<typeof ConfigFileSchema>;
/** Resources by kind. */
export type Resources = ConfigFile['resources'];
