// The SSE stream of a session's (or one run's) stored events, for the server's routes (docs/http-api.md).
export { EventStreams, type EventStreamsOptions } from './eventStreams.js';
export {
  DEFAULT_STREAM_LIMITS,
  serveEventStream,
  type EventStreamHandle,
  type StreamEnd,
  type StreamLimits,
  type StreamTarget,
} from './eventStream.js';
export { CommitWatcher, DEFAULT_POLL_MS } from './commitWatcher.js';
export { PumpScheduler, DEFAULT_SLICE_MS } from './pumpScheduler.js';
export { parseStartSeq, MAX_START_SEQ, type StartSeq, type StartSeqProblem } from './startSeq.js';
export { HEARTBEAT, SSE_HEADERS, sseMessage } from './sseFrame.js';
