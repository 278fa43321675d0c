import type { HostConfig } from './config/hostConfig.js';
import { databaseUrlSecrets, parseDatabaseUrl } from './config/databaseUrl.js';
import { HostError } from './errors.js';
import { ConfigRepo } from './state/configRepo.js';
import { idleInTransactionBound } from './state/hostLeases.js';
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
 * and the database URL before the store opens, the configuration's secrets as soon as it is open. The one way the
 * composition root and the read path of `openHostState` (start.ts) get a store, so both redact the same secrets.
 */
export function openHostStore(config: HostConfig, redactor: Redactor = hostRedactor()): HostStore {
  // Checked here too: a library user's HostConfig did not come through the command line's parsing.
  const databaseUrl = parseDatabaseUrl(config.databaseUrl, 'HostConfig.databaseUrl');
  if (databaseUrl) for (const secret of databaseUrlSecrets(databaseUrl)) redactor.add(secret);
  const listenerErrors: HostStore['listenerErrors'] = {};
  const warn = warnListenerError((v) => redactor.value(v));
  let store: Store;
  try {
    store = Store.open({
      dataDir: config.dataDir,
      ...(databaseUrl ? { databaseUrl, idleInTransactionMs: idleInTransactionBound(config.leaseMs) } : {}),
      durability: config.durability,
      redact: (v) => redactor.value(v),
      hooks: config.storeHooks,
      onListenerError: (error, event) => (listenerErrors.to ?? warn)(error, event),
    });
  } catch (error) {
    // A driver's message may quote a piece of the URL: what is printed passes the redactor (without the cause).
    if (!(error instanceof HostError) || !databaseUrl) throw error;
    throw new HostError(error.code, redactor.text(error.message), error.data);
  }
  registerConfigSecrets(redactor, new ConfigRepo(store).snapshot().resources);
  return { store, redactor, listenerErrors };
}
