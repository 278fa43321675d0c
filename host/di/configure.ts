import type { HostConfig } from '../config/hostConfig.js';
import { Dispatcher } from '../dispatch/dispatcher.js';
import { Gateway } from '../gateway/gateway.js';
import { createHostLogger } from '../logging/logger.js';
import { ConfigRepo } from '../bindings/configRepo.js';
import { registerConfigSecrets, registerEnvSecrets } from '../secrets/hostSecrets.js';
import { Redactor } from '../secrets/redactor.js';
import { RunService } from '../runs/runService.js';
import { Store } from '../state/store.js';
import { container as rootContainer, instanceCachingFactory, type InjectionToken } from './container.js';
import { TOKENS } from './tokens.js';

type Container = typeof rootContainer;

/** The composition root: registers every host service for `config` on `container`. */
export function configureContainer(
  config: HostConfig,
  container: Container = rootContainer.createChildContainer(),
): Container {
  container.register(TOKENS.HostConfig, { useValue: config });
  // One redactor per host: the host's env secrets now, the configuration's once the store is open.
  const redactor = new Redactor();
  registerEnvSecrets(redactor);
  container.register(TOKENS.Redactor, { useValue: redactor });
  container.register(TOKENS.Store, {
    useFactory: instanceCachingFactory((c) => {
      const store = Store.open({
        dataDir: config.dataDir,
        durability: config.durability,
        redact: (v) => redactor.value(v),
        hooks: config.storeHooks,
        // A listener's failure on a committed event is the host's log's, never the writer's error.
        onListenerError: (err, event) =>
          c
            .resolve(TOKENS.Logger)
            .error({ err, eventId: event.id, type: event.type }, 'a store listener failed on a committed event'),
      });
      registerConfigSecrets(redactor, new ConfigRepo(store).snapshot().resources);
      return store;
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
