// Migration 12 on a database holding webhook deliveries: the table is rebuilt with its `subject` (the run id for the
// deliveries it had), nothing is lost, the attempts keep their parent, and a run may then have several deliveries.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../../host/state/db.js';
import { builtinMigrations, migrate } from '../../../host/state/migrate.js';
import { Store } from '../../../host/state/store.js';
import { deliveriesOf, hasDelivery, insertDelivery } from '../../../host/state/webhooks.js';
import { rawDb } from '../../helpers/rawDb.js';

const dataDir = mkdtempSync(join(tmpdir(), 'paddock-migration12-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
const at = '2026-01-01T00:00:00.000Z';

describe('migration 12: approval reads', () => {
  it('rebuilds webhook_deliveries keyed by subject: rows and attempts kept, every FK intact', () => {
    const db = openDatabase(join(dataDir, 'paddock.db'));
    migrate(
      db,
      builtinMigrations().filter((m) => m.version < 12),
    );
    db.prepare(
      'INSERT INTO webhooks (id, tenant, url, events, secret, created_at, created_by, swept_to) ' +
        "VALUES ('whk_1', 'default', 'http://127.0.0.1/h', '[\"run.ended\"]', 's', ?, 'test', ?)",
    ).run(at, at);
    db.prepare(
      'INSERT INTO webhook_deliveries (id, webhook_id, tenant, run_id, type, body, state, attempts, last_status, ' +
        "next_attempt_at, created_at, updated_at) VALUES ('whd_1', 'whk_1', 'default', 'run_1', 'run.ended', '{}', " +
        "'delivered', 1, 204, 0, ?, ?)",
    ).run(at, at);
    db.prepare(
      'INSERT INTO webhook_attempts (delivery_id, attempt, at, status, error, duration_ms) ' +
        "VALUES ('whd_1', 1, ?, 204, NULL, 5)",
    ).run(at);
    db.close();

    const store = Store.open({ dataDir });
    try {
      const raw = rawDb(store);
      expect(raw.pragma('foreign_key_check')).toEqual([]);
      expect(raw.pragma('integrity_check', { simple: true })).toBe('ok');
      expect(raw.prepare('SELECT subject, run_id, state, attempts FROM webhook_deliveries').all()).toEqual([
        { subject: 'run_1', run_id: 'run_1', state: 'delivered', attempts: 1 },
      ]);
      expect(raw.prepare('SELECT count(*) FROM webhook_attempts').pluck().get()).toBe(1);
      expect(deliveriesOf(store, 'whk_1').map((d) => d.id)).toEqual(['whd_1']);
      // The run's end is still delivered once; an approval of the same run is a delivery of its own.
      expect(hasDelivery(store, 'whk_1', 'run_1')).toBe(true);
      const delivery = { webhookId: 'whk_1', tenant: 'default', runId: 'run_1', body: '{}', at };
      expect(insertDelivery(store, { ...delivery, id: 'whd_2', type: 'run.ended' }, 0)).toBe(false);
      const approval = { ...delivery, type: 'approval.requested', subject: 'apr_1' };
      expect(insertDelivery(store, { ...approval, id: 'whd_3' }, 0)).toBe(true);
      expect(insertDelivery(store, { ...approval, id: 'whd_4' }, 0)).toBe(false);
      expect(insertDelivery(store, { ...approval, id: 'whd_5', subject: 'apr_1/decided' }, 0)).toBe(true);
      expect(
        deliveriesOf(store, 'whk_1')
          .map((d) => d.id)
          .sort(),
      ).toEqual(['whd_1', 'whd_3', 'whd_5']);
      // The metrics' read of policy answers uses the partial index.
      const plan = raw
        .prepare(
          "EXPLAIN QUERY PLAN SELECT 1 FROM events e WHERE e.type = 'approval.decided' AND " +
            "json_extract(e.data, '$.grantId') = ?",
        )
        .all('grt_1') as { detail: string }[];
      expect(plan.map((p) => p.detail).join(' ')).toContain('events_approval_decided');
    } finally {
      store.close();
    }
  });
});
