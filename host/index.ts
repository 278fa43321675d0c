/**
 * paddock host library (`import { openHost } from 'paddock'`): supervise runner processes, keep state, bind and
 * dispatch. The `paddock` CLI is built on this. A library user needs no decorators and no paddock tsconfig: this
 * is compiled JavaScript with .d.ts (dist/host/index.js); start with {@link openHost}.
 */
export { openHost, openHostState, describeRecovery } from './start.js';
export { superviseRun, type SuperviseRunOptions } from './runs/superviseRun.js';
export { RunService, type AdHocRunRequest } from './runs/runService.js';
export { buildRunParams, newRunId, textEvent } from '../sdk/protocol/runParams.js';
export { HostLimitsSchema, parseLimits, type HostLimits, type HostLimitsInput } from './config/limits.js';
export { HOST_INFO, type HostConfig } from './config/hostConfig.js';
export { configureContainer } from './di/configure.js';
export { TOKENS } from './di/tokens.js';
export {
  OUTCOME_STATUSES,
  OUTCOME_EXIT_CODES,
  type RunOutcome,
  type OutcomeStatus,
  type Termination,
} from './process/outcome.js';
export type { IsolationReport } from './process/isolationReport.js';
export { isolationReport, prepareSandbox, type SandboxRequest } from './sandbox/prepare.js';
export { primeMachineProbe, probeMachine, type MachineReport } from './sandbox/probe.js';
export { buildRunnerEnv, INHERITED_ENV } from './process/envAllowlist.js';
export type { RunnerLaunch } from './process/spawnRunner.js';
export { resolveRunner, loadManifest, runnerCommand, type ResolvedRunner } from './plugins/resolveRunner.js';
export { RunnerManifestSchema, type RunnerManifestFile } from './plugins/manifest.js';
export { unsupportedHostRequests, type HostRequestHandler, type HostRequestScope } from './rpc/hostRequestHandler.js';
export { HostError, type HostErrorCode } from './errors.js';
export { Store, type StoreOptions, type NewEvent, type RunRow } from './state/store.js';
export { EVENT_DATA, type EventType, type EventData, type StoredEvent } from './state/events.js';
export { foldAll, foldEvent, emptySession, viewSession, type SessionView } from './state/sessionView.js';
export { performEffect, type EffectSpec } from './state/effects.js';
export { reconcile, resolveRun, type RecoveryReport } from './recovery/reconcile.js';
export { PROBERS, probeEffect, type Prober, type ProbeVerdict } from './recovery/probes.js';
export { verifyAudit, type AuditVerdict, type AuditProblem } from './audit/verify.js';
export { AuditLog, type AuditEntry, type AuditRecord, type Redactor } from './audit/auditLog.js';
export { Dispatcher, type DispatchTicket, type DispatchHooks, type RefusalReason } from './dispatch/dispatcher.js';
export { requestCancel, RunControlWatcher } from './dispatch/runControls.js';
export { applyConfig, type AppliedChange, type ApplyOptions } from './bindings/apply.js';
export { ConfigRepo, type ConfigKind, type ConfigObject } from './bindings/configRepo.js';
export { explainBinding, renderExplanation, type Explanation } from './bindings/explain.js';
export { validateConfig, parseConfigText } from './bindings/validateConfig.js';
export {
  BindingSchema,
  ConfigFileSchema,
  GrantsSchema,
  RouteSchema,
  type Binding,
  type ConfigFile,
  type Grants,
  type Route,
} from './bindings/schema.js';
export { resolveRunAccess, indexResources, type RunAccess } from './authz/runAccess.js';
export { discoverRunners, type RunnerCatalog, type ManifestProblem } from './plugins/catalog.js';
