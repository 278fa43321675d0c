import type { Logger } from 'pino';
import type { HostConfig } from '../config/hostConfig.js';
import type { Dispatcher } from '../dispatch/dispatcher.js';
import type { Gateway } from '../gateway/gateway.js';
import type { RunService } from '../runs/runService.js';
import type { Redactor } from '../secrets/redactor.js';
import type { Store } from '../state/store.js';
import type { InjectionToken } from './container.js';

/** Every DI token of the host. Services import each other's classes with `import type` only. */
export const TOKENS = {
  Dispatcher: Symbol('Dispatcher') as InjectionToken<Dispatcher>,
  Gateway: Symbol('Gateway') as InjectionToken<Gateway>,
  HostConfig: Symbol('HostConfig') as InjectionToken<HostConfig>,
  Logger: Symbol('Logger') as InjectionToken<Logger>,
  Redactor: Symbol('Redactor') as InjectionToken<Redactor>,
  RunService: Symbol('RunService') as InjectionToken<RunService>,
  Store: Symbol('Store') as InjectionToken<Store>,
} as const;
