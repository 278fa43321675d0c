import type { HostConfig } from '../config/hostConfig.js';
import { Dispatcher } from '../dispatch/dispatcher.js';
import { Gateway } from '../gateway/gateway.js';
import { createHostLogger } from '../logging/logger.js';
import { hostRedactor, openHostStore, type HostStore } from '../hostStore.js';
import { RunService } from '../runs/runService.js';
import { configureHelperSpawner } from '../sandbox/helperSpawner.js';
import { configureRunnerSpawner } from '../process/runnerSpawner.js';
import { container as rootContainer, instanceCachingFactory, type InjectionToken } from './container.js';
import { TOKENS } from './tokens.js';

type Container = typeof rootContainer;

/**
 * The composition root: registers every host service for `config` on a new child container. `opened`: a store already
 * opened with {@link openHostStore} (host start-up opens it first); otherwise the store opens on first resolve.
 */
export function configureContainer(config: HostConfig, opened?: HostStore): Container {
  const container = rootContainer.createChildContainer();
  if (config.helperConcurrency !== undefined) configureHelperSpawner({ concurrency: config.helperConcurrency });
  if (config.runnerSpawnerAnswerMs !== undefined) configureRunnerSpawner({ answerMs: config.runnerSpawnerAnswerMs });
  container.register(TOKENS.HostConfig, { useValue: config });
  // One redactor per host, the one the store was opened with: it knows the env and the configuration's secrets.
  const redactor = opened?.redactor ?? hostRedactor();
  container.register(TOKENS.Redactor, { useValue: redactor });
  container.register(TOKENS.Store, {
    useFactory: instanceCachingFactory((c) => {
      const host = opened ?? openHostStore(config, redactor);
      // A listener's failure on a committed event is the host's log's, never the writer's error.
      host.listenerErrors.to = (err, event) =>
        c
          .resolve(TOKENS.Logger)
          .error({ err, eventId: event.id, type: event.type }, 'a store listener failed on a committed event');
      return host.store;
    }),
  });
  container.register(TOKENS.Logger, {
    useFactory: instanceCachingFactory(() => createHostLogger(config.logLevel, (line) => redactor.text(line))),
  });
  // One gateway per host: its listener, provider clients and circuit breakers outlive runs.
  container.register(TOKENS.Gateway, {
    useFactory: instanceCachingFactory(
      (c) =>
        new Gateway({
          store: c.resolve(TOKENS.Store),
          redactor,
          log: c.resolve(TOKENS.Logger),
          dataDir: config.dataDir,
        }),
    ),
  });
  container.register(TOKENS.RunService, { useFactory: instanceCachingFactory((c) => c.resolve(RunService)) });
  // One dispatcher per host: it owns the in-memory queues and concurrency counts.
  container.register(TOKENS.Dispatcher, { useFactory: instanceCachingFactory((c) => c.resolve(Dispatcher)) });
  return container;
}

/** Every token the composition root must be able to resolve (checked by a smoke test). */
export const ALL_TOKENS: InjectionToken<unknown>[] = Object.values(TOKENS);
