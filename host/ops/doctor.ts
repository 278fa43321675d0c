/**
 * What `paddock doctor` and `GET /v1/doctor` report: the sandbox backends and limits this machine can enforce (and
 * why not), the harness CLIs, the run identity, and the stored resources' secret references that do not resolve here.
 */
import type { KnowledgeBaseResource, McpServerResource, ModelResource } from '../bindings/schema.js';
import type { HostConfig } from '../config/hostConfig.js';
import { DEFAULT_TENANT } from '../config/tenant.js';
import { harnessReports, type HarnessReport } from '../harness/harnesses.js';
import { BACKENDS, sandboxBackend } from '../sandbox/backend.js';
import { runIdentityReport } from '../sandbox/identityReport.js';
import { probeMachine, type MachineReport } from '../sandbox/probe.js';
import { describeMissingRef, missingSecretRefs } from '../secrets/hostSecrets.js';
import type { ConfigKind } from '../state/configRepo.js';

/** The kinds of stored resource that hold secret references. */
export const SECRET_HOLDING_KINDS: readonly ConfigKind[] = ['model', 'knowledgeBase', 'mcpServer'];

/**
 * One line per secret reference of `specs` (stored resources, as `readStoredSpecs` gives them) that does not resolve
 * in this process's environment; only the resources of `tenant` when one is given.
 */
export function missingSecretLines(specs: { kind: ConfigKind; spec: unknown }[], tenant?: string): string[] {
  const mine = specs.filter(
    (r) => tenant === undefined || ((r.spec as { tenant?: string }).tenant ?? DEFAULT_TENANT) === tenant,
  );
  const of = <T>(kind: string) => mine.filter((r) => r.kind === kind).map((r) => r.spec as T);
  return missingSecretRefs({
    models: of<ModelResource>('model'),
    knowledgeBases: of<KnowledgeBaseResource>('knowledgeBase'),
    mcpServers: of<McpServerResource>('mcpServer'),
  }).map(describeMissingRef);
}

/**
 * Doctor's report (`paddock doctor --json`). `missingSecrets` is computed by the caller (it reads the store); `machine`
 * defaults to this process's probe (the CLI passes a fresh one: doctor is what an admin runs when something failed);
 * `harnesses` to asking each CLI now (the server passes its cached, asynchronously made reports).
 */
export function doctorReport(
  config: HostConfig,
  missingSecrets: string[],
  machine: MachineReport = probeMachine(),
  harnesses: HarnessReport[] = harnessReports(),
) {
  // Every backend this machine can run, with what it would enforce here.
  const backends = Object.fromEntries(
    BACKENDS.map(sandboxBackend)
      .filter((b) => b.available(machine).ok)
      .map((b) => [b.name, b.report(config.limits, machine, machine.cgroups)]),
  );
  const identity = runIdentityReport(machine.identity, config.dataDir);
  return { machine, backends, harnesses, identity, missingSecrets };
}

/** What {@link doctorReport} answers. */
export type DoctorReport = ReturnType<typeof doctorReport>;
