import { z } from 'zod';
import { HOST_METHOD_NAMES } from '../../sdk/protocol/methods.js';
import { FORBIDDEN_ENV, HOST_SET_ENV } from '../process/envAllowlist.js';

const reservedEnv = new Set<string>([...HOST_SET_ENV, ...FORBIDDEN_ENV]);

/**
 * `runner.json`: who a runner is and how to start it. Fields for effects, config schema,
 * resources and default limits arrive with the bindings work (docs/runner-authoring.md).
 */
export const RunnerManifestSchema = z.strictObject({
  id: z.string().regex(/^[a-z0-9][a-z0-9-]{0,63}$/, 'lowercase letters, digits and dashes'),
  name: z.string().min(1),
  version: z.string().min(1),
  protocolVersion: z.int().positive(),
  description: z.string().default(''),
  /**
   * `{ "node": "index.ts" }` runs a file of the runner folder with the host's Node (TypeScript
   * through tsx); `{ "command": "python3", "args": ["{runnerDir}/runner.py"] }` runs anything.
   */
  entry: z.union([
    z.strictObject({ node: z.string().min(1) }),
    z.strictObject({ command: z.string().min(1), args: z.array(z.string()).default([]) }),
  ]),
  /** Literal, non-secret variables. Secrets never go here (they reach runners through the gateway). */
  env: z
    .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name'), z.string())
    .default({})
    .refine((env) => Object.keys(env).every((k) => !reservedEnv.has(k)), {
      message: `may not set ${[...reservedEnv].join(', ')}`,
    }),
  capabilities: z
    .strictObject({ hostRequests: z.array(z.enum(HOST_METHOD_NAMES as [string, ...string[]])).default([]) })
    .default({ hostRequests: [] }),
});

/** A parsed runner manifest. */
export type RunnerManifestFile = z.infer<typeof RunnerManifestSchema>;
