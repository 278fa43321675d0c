/** paddock host library: supervise runner processes. The `paddock` CLI is built on this. */
export { superviseRun, type SuperviseRunOptions } from './runs/superviseRun.js';
export { RunService, type AdHocRunRequest } from './runs/runService.js';
export { buildRunParams, newRunId, textEvent } from '../sdk/protocol/runParams.js';
export { HostLimitsSchema, parseLimits, type HostLimits, type HostLimitsInput } from './config/limits.js';
export { HOST_INFO, type HostConfig } from './config/hostConfig.js';
export { configureContainer } from './di/configure.js';
export { TOKENS } from './di/tokens.js';
export { OUTCOME_STATUSES, OUTCOME_EXIT_CODES, type RunOutcome, type OutcomeStatus, type Termination } from './process/outcome.js';
export { PROCESS_BACKEND_REPORT, type IsolationReport } from './process/isolationReport.js';
export { buildRunnerEnv, INHERITED_ENV } from './process/envAllowlist.js';
export type { RunnerLaunch } from './process/spawnRunner.js';
export { resolveRunner, loadManifest, runnerCommand, type ResolvedRunner } from './plugins/resolveRunner.js';
export { RunnerManifestSchema, type RunnerManifestFile } from './plugins/manifest.js';
export { unsupportedHostRequests, type HostRequestHandler, type HostRequestScope } from './rpc/hostRequestHandler.js';
export { HostError, type HostErrorCode } from './errors.js';
