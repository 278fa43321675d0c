import type { HostConfig } from '../config/hostConfig.js';
import { Dispatcher } from '../dispatch/dispatcher.js';
import { createHostLogger } from '../logging/logger.js';
import { RunService } from '../runs/runService.js';
import { Store } from '../state/store.js';
import { container as rootContainer, instanceCachingFactory, type InjectionToken } from './container.js';
import { TOKENS } from './tokens.js';

type Container = typeof rootContainer;

/** The composition root: registers every host service for `config` on `container`. */
export function configureContainer(config: HostConfig, container: Container = rootContainer.createChildContainer()): Container {
  container.register(TOKENS.HostConfig, { useValue: config });
  container.register(TOKENS.Store, { useFactory: instanceCachingFactory(() => Store.open({ dataDir: config.dataDir, durability: config.durability })) });
  container.register(TOKENS.Logger, { useFactory: instanceCachingFactory(() => createHostLogger(config.logLevel)) });
  container.register(TOKENS.RunService, { useFactory: instanceCachingFactory((c) => c.resolve(RunService)) });
  // One dispatcher per host: it owns the in-memory queues and concurrency counts.
  container.register(TOKENS.Dispatcher, { useFactory: instanceCachingFactory((c) => c.resolve(Dispatcher)) });
  return container;
}

/** Every token the composition root must be able to resolve (checked by a smoke test). */
export const ALL_TOKENS: InjectionToken<unknown>[] = Object.values(TOKENS);
