import type { HostConfig } from '../config/hostConfig.js';
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
  container.register(TOKENS.RunService, { useClass: RunService });
  return container;
}

/** Every token the composition root must be able to resolve (checked by a smoke test). */
export const ALL_TOKENS: InjectionToken<unknown>[] = Object.values(TOKENS);
