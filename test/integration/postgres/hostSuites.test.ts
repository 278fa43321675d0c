// Unit suites of the host's parts above the store, run unchanged on the PostgreSQL store (docs/scale-out.md,
// "Contract tests"): crash recovery's reconciliation, the gateway's budgets, the admin API's lists, audit export and
// verification — each through the state modules they call, on a throwaway cluster started here.
import { vi } from 'vitest';
import { onStoreBackend } from '../../helpers/store.js';
import { postgresBackend } from '../../helpers/storeBackends.js';

vi.setConfig({ testTimeout: 120_000 });

await onStoreBackend(postgresBackend(), async () => {
  await import('../../unit/recovery/recovery.test.js');
  await import('../../unit/gateway/modelBudget.test.js');
  await import('../../unit/api/adminOps.test.js');
});
