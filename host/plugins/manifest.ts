import { z } from 'zod';
import { HOST_METHOD_NAMES } from '../../sdk/protocol/methods.js';
import { EffectSchema } from '../../sdk/protocol/schemas/common.js';
import { manifestEnvProblem } from '../process/envAllowlist.js';

/** Kinds of admin-declared resources a runner can be granted (docs/admin-guide.md). */
export const RESOURCE_KINDS = ['models', 'knowledgeBases', 'mcpServers', 'skills', 'artifacts', 'mounts'] as const;
/** One resource kind. */
export type ResourceKind = (typeof RESOURCE_KINDS)[number];

/** Per-run limits a manifest or binding may set; each is capped by the host's own limit. */
export const RunLimitOverridesSchema = z.strictObject({
  wallClockMs: z.int().positive().optional(),
  idleMs: z.int().positive().optional(),
  maxUpdates: z.int().positive().optional(),
  maxEventBytes: z.int().positive().optional(),
  maxStdoutBytes: z.int().positive().optional(),
  maxStderrBytes: z.int().positive().optional(),
  memoryBytes: z.int().positive().optional(),
  pids: z.int().positive().optional(),
  cpuSeconds: z.int().positive().optional(),
  fileSizeBytes: z.int().positive().optional(),
  openFiles: z.int().min(32).optional(),
  diskBytes: z
    .int()
    .min(8 * 1024 * 1024)
    .optional(),
  inodes: z.int().min(64).optional(),
});

// A command line word the OS can take: execve() ends a string at NUL, so `a\0b` would silently run `a` (Node refuses
// it with an uncaught TypeError instead). Checked in the schema so the manifest is refused naming the field.
const commandWord = () => z.string().regex(/^[^\0]*$/, 'a NUL byte is not allowed (the OS cannot pass it)');

/**
 * `runner.json`: who a runner is, how to start it, what it asks for (host requests, resource
 * kinds), what it may do on its own (effects), the config it takes (JSON Schema), its default
 * limits and a risk note for admins (docs/runner-authoring.md, docs/runner-manifest.schema.json).
 */
export const RunnerManifestSchema = z
  .strictObject({
    id: z.string().regex(/^[a-z0-9][a-z0-9-]{0,63}$/, 'lowercase letters, digits and dashes'),
    name: z.string().min(1),
    version: z.string().min(1),
    protocolVersion: z.int().positive(),
    description: z.string().default(''),
    /**
     * `{ "node": "index.ts" }` runs a file of the runner folder with the host's Node (TypeScript
     * is bundled first); `{ "command": "python3", "args": ["{runnerDir}/runner.py"] }` runs anything.
     */
    entry: z.union([
      z.strictObject({ node: commandWord().min(1) }),
      z.strictObject({ command: commandWord().min(1), args: z.array(commandWord()).default([]) }),
    ]),
    /**
     * Literal, non-secret variables for the runner's own process (never the host's helpers). An
     * allowlist: names are upper-snake-case in the runner's namespace, `PADDOCK_RUNNER_*` or its
     * id's prefix (`MY_RUNNER_*` for `my-runner`), and never a name a loader, interpreter, shell
     * or the host reads (PATH, LD_*, NODE_*, PYTHON*, …). Secrets never go here (they reach
     * runners through the gateway).
     */
    env: z
      // A NUL byte cannot be in an environment value (and must never split the launch file's words).
      .record(z.string(), z.string().regex(/^[^\0]*$/, 'a NUL byte is not allowed in an environment value'))
      .default({})
      // Names are checked below with the id (every bad name reported); the pattern is for the published schema.
      .meta({
        propertyNames: { pattern: '^[A-Z][A-Z0-9_]*$' },
        description:
          "Literal variables for the runner's own process. Names: PADDOCK_RUNNER_* or the runner id " +
          'upper-snake-cased as a prefix (MY_RUNNER_* for my-runner); PATH, LD_*, NODE_*, PYTHON*, *_PRELOAD, ' +
          '*PROXY and every other name a loader, interpreter, shell or the host reads are refused.',
      }),
    /** Host requests the runner may call; a binding must also grant each one. */
    capabilities: z
      .strictObject({
        hostRequests: z.array(z.enum(HOST_METHOD_NAMES as [string, ...string[]])).default([]),
        /**
         * The runner takes user messages during a run (`run/message`, steering `append`). Shown by `paddock explain`;
         * what the host acts on is the runner's own `initialize` answer.
         */
        append: z.boolean().default(false),
      })
      .default({ hostRequests: [], append: false }),
    /** Kinds of resources the runner can use; a granted resource of another kind is not projected. */
    resources: z.array(z.enum(RESOURCE_KINDS)).default([]),
    /**
     * Side effects the runner (or the harness it wraps) may cause by itself, outside host
     * requests: shown by `paddock explain`; the sandbox backend decides what it can stop.
     */
    effects: z.array(EffectSchema).default([]),
    /** JSON Schema (draft 2020-12) of the binding's `config`; checked when a binding is saved. */
    configSchema: z.record(z.string(), z.unknown()).default({ type: 'object' }),
    /** Default per-run limits (a binding may override; the host's limits cap both). */
    limits: RunLimitOverridesSchema.default({}),
    /** What an admin should know before binding this runner (e.g. "runs shell commands"). */
    risk: z.string().default(''),
    /**
     * How the package installs (docs/runner-packages.md): `nativeBuild` says it needs its install scripts run (a
     * native addon); `paddock runners install` refuses it unless the admin passes `--allow-native-build` (audited).
     */
    install: z.strictObject({ nativeBuild: z.boolean().default(false) }).optional(),
  })
  .superRefine((manifest, ctx) => {
    // The env rule needs the id (the runner's own prefix), so it is checked on the whole object.
    for (const name of Object.keys(manifest.env)) {
      const problem = manifestEnvProblem(manifest.id, name);
      if (problem) ctx.addIssue({ code: 'custom', path: ['env', name], message: `${name} ${problem}` });
    }
  })
  .meta({ id: 'RunnerManifest', title: 'paddock runner manifest (runner.json)' });

/** A parsed runner manifest. */
export type RunnerManifestFile = z.infer<typeof RunnerManifestSchema>;
