import type { HostConfig } from './config/hostConfig.js';
import { ConfigRepo } from './state/configRepo.js';
import { registerConfigSecrets, registerEnvSecrets } from './secrets/hostSecrets.js';
import { Redactor } from './secrets/redactor.js';
import type { StoredEvent } from './state/events.js';
import { Store, warnListenerError } from './state/store.js';

/** The host's store and the one redactor every stored and logged byte passes through. */
export interface HostStore {
  store: Store;
  redactor: Redactor;
  /**
   * Where a store listener's failure on a committed event goes: `to`, once the composition root points it at the
   * host logger; until then a redacted process warning.
   */
  listenerErrors: { to?: (error: unknown, event: StoredEvent) => void };
}

/** A host's redactor before its store opens: it knows the secrets in the host's own environment. */
export function hostRedactor(): Redactor {
  const redactor = new Redactor();
  registerEnvSecrets(redactor);
  return redactor;
}

/**
 * Open the host's store (migrating it) behind its redactor: `redactor` ({@link hostRedactor}) knows the env secrets
 * before the store opens, the configuration's secrets as soon as it is open. The one way the composition root and
 * the read path of `openHostState` (start.ts) get a store, so both redact the same secrets.
 */
export function openHostStore(config: HostConfig, redactor: Redactor = hostRedactor()): HostStore {
  const listenerErrors: HostStore['listenerErrors'] = {};
  const warn = warnListenerError((v) => redactor.value(v));
  const store = Store.open({
    dataDir: config.dataDir,
    durability: config.durability,
    redact: (v) => redactor.value(v),
    hooks: config.storeHooks,
    onListenerError: (error, event) => (listenerErrors.to ?? warn)(error, event),
  });
  registerConfigSecrets(redactor, new ConfigRepo(store).snapshot().resources);
  return { store, redactor, listenerErrors };
}
