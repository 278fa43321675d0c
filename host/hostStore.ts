import type { HostConfig } from './config/hostConfig.js';
import { ConfigRepo } from './state/configRepo.js';
import { registerConfigSecrets, registerEnvSecrets } from './secrets/hostSecrets.js';
import { Redactor } from './secrets/redactor.js';
import { Store } from './state/store.js';

/** The host's store and the one redactor every stored and logged byte passes through. */
export interface HostStore {
  store: Store;
  redactor: Redactor;
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
  const store = Store.open({
    dataDir: config.dataDir,
    durability: config.durability,
    redact: (v) => redactor.value(v),
    hooks: config.storeHooks,
  });
  registerConfigSecrets(redactor, new ConfigRepo(store).snapshot().resources);
  return { store, redactor };
}
