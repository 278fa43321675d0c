import { indexResources } from '../authz/runAccess.js';
import { BindingLimitsSchema, ModelResourceSchema } from '../bindings/schema.js';
import { parseLimits } from '../config/limits.js';
import type { Gateway, GatewayRunHandle, OpenRunInput } from './gateway.js';

/**
 * Open the gateway for a stand-in run granted one scripted model `sm` (process backend, no
 * budget to speak of unless `over.budget` gives one): what benchmarks and protocol suites need
 * to talk to a real gateway without a real run around it.
 */
export function openScriptedRun(
  gateway: Gateway,
  runId: string,
  over: { claims?: Partial<OpenRunInput['claims']> } & Partial<
    Pick<OpenRunInput, 'budget' | 'sandboxLimits' | 'tenant'>
  > = {},
): Promise<GatewayRunHandle> {
  const model = ModelResourceSchema.parse({ id: 'sm', provider: 'scripted', model: 'scripted-1' });
  return gateway.openRun({
    claims: { runId, sessionId: `ses-${runId}`, bindingId: `binding-${runId}`, runnerId: runId, ...over.claims },
    tenant: over.tenant ?? 'default',
    access: { models: [{ id: 'sm', provider: 'scripted', model: 'scripted-1' }], mcpServers: [], knowledgeBases: [] },
    resources: indexResources({
      models: [model],
      knowledgeBases: [],
      mcpServers: [],
      skills: [],
      artifacts: [],
      mounts: [],
    }),
    budget: over.budget ?? BindingLimitsSchema.parse({ modelTokensPerRun: 2_000_000_000 }),
    backend: 'process',
    sandboxLimits: over.sandboxLimits ?? parseLimits(),
    notice: () => {},
  });
}
