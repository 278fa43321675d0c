// The gateway opened for a made-up run, as the run pipeline opens it for a real one (runService.ts), for tests that
// drive the gateway's endpoints directly; and the answer a fake Anthropic-shaped provider gives.
import { indexResources } from '../../host/authz/runAccess.js';
import { BindingLimitsSchema, type Resources } from '../../host/bindings/schema.js';
import type { GatewayRunHandle, OpenRunInput } from '../../host/gateway/gateway.js';
import { RESOURCE_KINDS } from '../../host/plugins/manifest.js';
import type { tempHost } from './host.js';

/**
 * Open `host`'s gateway for run `runId` (its session, binding and runner named after it) over `resources` (kinds left
 * out are empty), granted `access` (kinds left out grant nothing); process backend, no budget limit, notices dropped,
 * unless `over` says otherwise.
 */
export function openGatewayRun(
  host: ReturnType<typeof tempHost>,
  run: {
    runId: string;
    resources: Partial<Resources>;
    access: Partial<OpenRunInput['access']>;
  } & Partial<Omit<OpenRunInput, 'claims' | 'resources' | 'access'>>,
): Promise<GatewayRunHandle> {
  const { runId, resources, access, ...over } = run;
  return host.gateway.openRun({
    claims: { runId, sessionId: `ses-of-${runId}`, bindingId: `binding-of-${runId}`, runnerId: 'test-harness' },
    tenant: 'default',
    access: { models: [], mcpServers: [], knowledgeBases: [], ...access },
    resources: indexResources(
      Object.fromEntries(RESOURCE_KINDS.map((kind) => [kind, resources[kind] ?? []])) as unknown as Resources,
    ),
    budget: BindingLimitsSchema.parse({}),
    backend: 'process',
    sandboxLimits: host.config.limits,
    notice: () => undefined,
    ...over,
  });
}

/** A whole (not streamed) Anthropic Messages answer of `model` saying `text`, as JSON. */
export function anthropicMessage(model: string, text: string): string {
  return JSON.stringify({
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model,
    content: [{ type: 'text', text }],
    stop_reason: 'end_turn',
    usage: { input_tokens: 3, output_tokens: 1 },
  });
}
