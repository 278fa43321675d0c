/**
 * paddock runner SDK: write a runner, serve it over stdio, test it.
 * Protocol reference: docs/protocol.md. Authoring guide: docs/runner-authoring.md.
 */
export { z } from 'zod';
export {
  defineRunner,
  type RunnerDefinition,
  type RunnerManifest,
  type RunBinding,
  type RunReturn,
} from './runner/defineRunner.js';
export { serve, type ServeOptions } from './runner/serve.js';
export type { RunContext, HostCalls } from './runner/context.js';
export type { MessageHandler } from './runner/messageSlot.js';
export { eventText } from './runner/eventText.js';
export { createRunnerLogger, type Logger } from './logger.js';
export {
  spawnHarness,
  mapHarnessLine,
  type HarnessOptions,
  type HarnessLine,
  type HarnessExit,
  type Harness,
  type LineMappers,
  killTree,
} from './harness/spawnHarness.js';
export { locateHarness, type LocatedHarness } from './harness/locate.js';
export { gatewayAccess, hasAccess, type GatewayAccess } from './harness/gatewayAccess.js';
export { runHarnessTurn, harnessExitFailure, type HarnessTurnOptions } from './harness/harnessTurn.js';
export { claudeEnv } from './harness/claudeEnv.js';
export { proxyEnv } from './harness/proxyEnv.js';
export { configJsonSchema } from './runner/configJsonSchema.js';
/** Deepest nesting a protocol message may have (docs/protocol.md, Transport). */
export { MAX_JSON_DEPTH } from './transport/jsonDepth.js';
export {
  PROTOCOL_VERSION,
  ErrorCodes,
  RpcError,
  type ErrorCode,
  type ChatEvent,
  type WireBinding,
  type RunInfo,
  type Resume,
  type RunResult,
  type RunResultInput,
  type RunStatus,
  type Update,
  type UpdateInput,
  type UpdateKind,
  type Usage,
  type MessagePart,
  type JsonValue,
  type Effect,
  type ApprovalRequestResult,
  type ParamsOf,
  type ResultOf,
} from './protocol/index.js';
