import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyConfig } from '../../host/bindings/apply.js';
import type { HostConfig } from '../../host/config/hostConfig.js';
import { parseLimits, type HostLimitsInput } from '../../host/config/limits.js';
import { configureContainer } from '../../host/di/configure.js';
import { TOKENS } from '../../host/di/tokens.js';
import { discoverRunners } from '../../host/plugins/catalog.js';
import { repoPath } from './fixtures.js';

/** The folder of test runner fixtures, as a configured runner directory. */
export const FIXTURE_RUNNERS = repoPath('test/fixtures/runnerDirs');

/** A real host (store, run service, dispatcher) over a fresh data folder, with the fixture runners. */
export function tempHost(
  options: {
    dataDir?: string;
    limits?: HostLimitsInput;
    mountRoots?: string[];
    maxConcurrentRuns?: number;
    maxQueuedRuns?: number;
    maxQueuedRunsPerTenant?: number;
    harnessDir?: string;
    helperConcurrency?: number;
    runnerSpawnerAnswerMs?: number;
  } = {},
) {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'paddock-host-'));
  const config: HostConfig = {
    dataDir,
    // Small disk quota images (the host default is 1 GiB): tests grep every byte of the data folder,
    // session images included, for canaries.
    limits: parseLimits({ diskBytes: 64 * 1024 * 1024, ...options.limits }),
    runnerDirs: [FIXTURE_RUNNERS],
    logLevel: 'silent',
    keepWorkspaces: false,
    mountRoots: options.mountRoots ?? [],
    maxConcurrentRuns: options.maxConcurrentRuns,
    maxQueuedRuns: options.maxQueuedRuns,
    maxQueuedRunsPerTenant: options.maxQueuedRunsPerTenant,
    harnessDir: options.harnessDir,
    helperConcurrency: options.helperConcurrency,
    runnerSpawnerAnswerMs: options.runnerSpawnerAnswerMs,
  };
  const container = configureContainer(config);
  const store = container.resolve(TOKENS.Store);
  const dispatcher = container.resolve(TOKENS.Dispatcher);
  const runs = container.resolve(TOKENS.RunService);
  const gateway = container.resolve(TOKENS.Gateway);
  return {
    gateway,
    redactor: container.resolve(TOKENS.Redactor),
    runs,
    config,
    dataDir,
    store,
    dispatcher,
    /** Apply a configuration as `paddock apply` would. */
    apply: (raw: unknown, opts: { prune?: boolean } = {}) =>
      applyConfig(
        store,
        raw,
        {
          catalog: discoverRunners(config.runnerDirs),
          mountRoots: config.mountRoots ?? [],
          redactor: container.resolve(TOKENS.Redactor),
        },
        { by: 'user:test', ...opts },
      ),
    close: async () => {
      await gateway.close();
      store.close();
    },
  };
}

let eventCounter = 0;
/** A chat event for dispatch; every call gets a new event id unless one is given. */
export function chatEvent(
  over: {
    id?: string;
    text?: string;
    platform?: string;
    bot?: string;
    conversation?: { type?: string; id?: string };
    type?: string;
  } = {},
) {
  eventCounter += 1;
  return {
    id: over.id ?? `evt-${process.pid}-${eventCounter}`,
    type: over.type ?? 'message',
    platform: over.platform ?? 'telegram',
    bot: over.bot ?? 'support',
    conversation: { type: over.conversation?.type ?? 'group', id: over.conversation?.id ?? 'c1' },
    sender: { id: 'u1', name: 'Ada' },
    message: { parts: [{ type: 'text', text: over.text ?? 'hello' }] },
    receivedAt: new Date().toISOString(),
  };
}
