// The host/state/ unit suites, run unchanged on the PostgreSQL store (docs/scale-out.md, "Contract tests"): each
// suite's tempStore() opens a store on a throwaway cluster here, and rawDb() is a second PostgreSQL connection. What
// only SQLite has (its query plans, `data_version`) stays in the SQLite run of the suite (itOnSqlite).
import { vi } from 'vitest';
import { onStoreBackend } from '../../helpers/store.js';
import { postgresBackend } from '../../helpers/storeBackends.js';

// Unit suites written for an in-process SQLite store; every statement here is a round trip to a server.
vi.setConfig({ testTimeout: 120_000 });

await onStoreBackend(postgresBackend(), async () => {
  await import('../../unit/state/approvals.test.js');
  await import('../../unit/state/capabilityGrants.test.js');
  await import('../../unit/state/apiTokens.test.js');
  await import('../../unit/state/overview.test.js');
  await import('../../unit/state/spend.test.js');
  await import('../../unit/state/appendMany.test.js');
  await import('../../unit/state/appendBatcher.test.js');
});
