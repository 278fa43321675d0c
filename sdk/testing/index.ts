/** paddock runner test kit: a fake host for unit tests and the conformance suite. */
export {
  createFakeHost,
  type FakeHost,
  type FakeHostOptions,
  type FakeRunInput,
  type FakeRunReport,
  type FakeHostHandler,
} from './fakeHost.js';
export {
  runRunnerConformance,
  type ConformanceOptions,
  type ConformanceReport,
  type ConformanceCheck,
  type ConformanceRun,
} from './conformance.js';
export {
  spawnRunnerProcess,
  inProcessRunner,
  type RunnerTransport,
  type RunnerFactory,
  type RunnerEnd,
} from './transports.js';
