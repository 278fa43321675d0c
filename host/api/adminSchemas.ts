/**
 * The zod schemas of `paddock serve`'s configuration admin endpoints (docs/http-api.md, "Admin endpoints"): runners,
 * the tenant's configuration, apply, bindings. Answers are loose where they carry stored specs or runner manifests
 * (their own schemas live in host/bindings/schema.ts and host/plugins/manifest.ts and validate them on the way in).
 */
import { z } from 'zod';
import { API_SCHEMAS } from './schemas.js';

/** Who, besides the token, made a change: recorded in the audit actor after the token (`api:<tokenId>/user:<by>`). */
export const BySchema = z
  .string()
  .regex(/^[A-Za-z0-9._@+-]{1,64}$/, 'a user name: letters, digits, ".", "_", "@", "+" and "-" (at most 64)')
  .optional()
  .describe('Who, besides the token, made the change; recorded after the token id in the audit actor.');

/** `:id` of a binding route (a stored binding id of the token's tenant). */
export const BindingIdParams = z.object({ id: z.string().min(1).max(256) });

/** A problem a runner package has (why it is not listed). */
const RunnerProblemSchema = z.object({ file: z.string(), field: z.string().optional(), message: z.string() });

/** `GET /v1/runners`: as `paddock runners list --json`. */
export const RunnersAnswerSchema = z.object({
  runners: z.array(z.looseObject({ id: z.string(), version: z.string(), dir: z.string(), source: z.string() })),
  problems: z.array(RunnerProblemSchema),
});
API_SCHEMAS.add(RunnersAnswerSchema, {
  id: 'Runners',
  description: 'The runners the host found (manifest, folder, source) and the broken ones with their error.',
});

const Spec = z.record(z.string(), z.unknown());

/** The configuration in the shape of `paddock.yaml` (secrets only as references). */
export const ConfigSchema = z.object({
  resources: z.object({
    models: z.array(Spec),
    knowledgeBases: z.array(Spec),
    mcpServers: z.array(Spec),
    skills: z.array(Spec),
    artifacts: z.array(Spec),
    mounts: z.array(Spec),
  }),
  bindings: z.array(Spec),
});
API_SCHEMAS.add(ConfigSchema, {
  id: 'Config',
  description: "The tenant's stored resources and bindings, as paddock.yaml (secrets are references, never values).",
});

/** `GET /v1/config` query. */
export const ConfigQuery = z.strictObject({ format: z.enum(['json', 'yaml']).default('json') });

/** A stored configuration object with its version. */
export const ConfigObjectSchema = z.object({
  kind: z.string(),
  id: z.string(),
  version: z.int(),
  spec: Spec,
  updatedAt: z.string(),
});
API_SCHEMAS.add(ConfigObjectSchema, { id: 'ConfigObject', description: 'A stored resource or binding.' });

/** A binding with its recorded changes. */
export const BindingShowSchema = ConfigObjectSchema.extend({
  history: z.array(z.object({ version: z.int(), action: z.string(), by: z.string(), at: z.string() })),
});

/** `POST /v1/config/apply`. */
export const ApplyBodySchema = z
  .strictObject({
    yaml: z.string().optional().describe('paddock.yaml as text (YAML or JSON).'),
    config: z.record(z.string(), z.unknown()).optional().describe('paddock.yaml as a JSON object.'),
    dryRun: z.boolean().optional().describe('Validate and answer what would change; change nothing.'),
    prune: z.boolean().optional().describe("Delete the tenant's stored objects the configuration does not list."),
    by: BySchema,
  })
  .refine((b) => (b.yaml === undefined) !== (b.config === undefined), {
    message: 'give yaml or config (exactly one)',
    path: ['yaml'],
  });

/** What apply did (or, dry, would do). */
export const ApplyAnswerSchema = z.object({
  dryRun: z.boolean(),
  changes: z.array(
    z.object({ kind: z.string(), id: z.string(), action: z.enum(['created', 'updated', 'unchanged', 'deleted']) }),
  ),
  warnings: z.array(z.object({ binding: z.string(), what: z.string(), why: z.string() })),
  missingSecrets: z.array(z.string()),
});
API_SCHEMAS.add(ApplyAnswerSchema, { id: 'ApplyAnswer', description: 'What applying a configuration changed.' });

/** `POST /v1/bindings/:id/enable|disable`. */
export const EnableBodySchema = z
  .strictObject({
    cancelActive: z
      .boolean()
      .optional()
      .describe("Disable only: ask the binding's queued and running runs to cancel (whichever process holds them)."),
    by: BySchema,
  })
  .nullish();

/** What enabling or disabling did. */
export const EnableAnswerSchema = z.object({
  bindingId: z.string(),
  enabled: z.boolean(),
  changed: z.boolean(),
  cancelRequested: z.int(),
  cancelledRunIds: z.array(z.string()),
});

/** `GET /v1/bindings/:id/explain`: `paddock explain --json`. */
export const ExplanationSchema = z.looseObject({
  binding: z.looseObject({ id: z.string(), tenant: z.string(), enabled: z.boolean(), runner: z.string() }),
  runner: z.looseObject({ id: z.string() }),
  effects: z.array(z.string()),
  limits: z.record(z.string(), z.number()),
  network: z.string(),
  sandbox: z.looseObject({ profile: z.string(), available: z.boolean() }),
  worstCase: z.looseObject({}),
  withheld: z.array(z.unknown()),
  missingSecrets: z.array(z.string()),
  /** The approval policy: rules in order, the host's defaults for sample actions, the floors (docs/approvals.md §2). */
  approvals: z.looseObject({
    approvalPolicy: z.enum(['ask', 'deny']),
    approvalTimeoutMs: z.number(),
    rules: z.array(z.looseObject({ n: z.number(), effect: z.string(), match: z.string(), decision: z.string() })),
    defaults: z.array(
      z.looseObject({
        case: z.string(),
        effect: z.string(),
        target: z.looseObject({ kind: z.string(), value: z.string() }),
        byDefault: z.looseObject({ decision: z.string(), by: z.string(), why: z.string() }),
        here: z.looseObject({ decision: z.string(), by: z.string(), why: z.string() }),
      }),
    ),
    floors: z.array(z.string()),
  }),
});
API_SCHEMAS.add(ExplanationSchema, {
  id: 'Explanation',
  description: 'What a run of the binding may touch in the worst case, computed by the code that enforces it.',
});
