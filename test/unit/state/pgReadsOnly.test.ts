// Which statements PgDb sends again on a new connection after losing the old one while waiting for their answer
// (host/state/pg/pgDb.ts, decision PH7): a lone SELECT that writes nothing, locks nothing, calls no effect.
import { describe, expect, it } from 'vitest';
import { readsOnly } from '../../../host/state/pg/pgDb.js';

describe('readsOnly', () => {
  it('takes a plain read, whatever its literals say', () => {
    expect(readsOnly("SELECT min(next_attempt_at) FROM webhook_deliveries WHERE state = 'pending'")).toBe(true);
    expect(readsOnly("  select * from events where type = 'run.update' and data <> 'delete; insert'")).toBe(true);
    expect(readsOnly('SELECT 7 AS n FROM pg_sleep($1);')).toBe(true);
  });

  it('refuses a write, a row lock, an effect, a second statement, or anything but a SELECT', () => {
    for (const sql of [
      'INSERT INTO t VALUES ($1)',
      'UPDATE hosts SET lease_until = $1',
      'WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x',
      'SELECT * FROM run_claims WHERE run_id = $1 FOR UPDATE',
      'SELECT * FROM run_claims FOR KEY SHARE',
      "SELECT pg_notify('paddock_events', $1)",
      'SELECT pg_advisory_xact_lock(1)',
      "SELECT nextval('s')",
      'SELECT * INTO copy FROM t',
      'SELECT 1; DELETE FROM t',
      'BEGIN',
    ])
      expect(readsOnly(sql), sql).toBe(false);
  });
});
