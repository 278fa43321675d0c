// The store's property suites, run unchanged on the PostgreSQL store (docs/scale-out.md, "Contract tests"): a run's
// events read from the session log equal the log filtered by run for any interleaving, cursor and page; the control
// fields and history events read by type equal the whole log's fold.
import { vi } from 'vitest';
import { onStoreBackend } from '../../helpers/store.js';
import { postgresBackend } from '../../helpers/storeBackends.js';

// One store (a schema, migrated) per property run in the second suite: 60 of them.
vi.setConfig({ testTimeout: 300_000 });

await onStoreBackend(postgresBackend(), async () => {
  await import('../../unit/state/runEventReads.property.test.js');
  await import('../../unit/state/sessionView.property.test.js');
});
