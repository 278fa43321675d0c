// The PostgreSQL store sorts text as SQLite does, by byte, or does not open (host/state/pg/pgDb.ts): a database whose
// collation is a language's (here ICU's English) would answer every ORDER BY and keyset page in another order.
import { afterAll, describe, expect, it } from 'vitest';
import { PgDb } from '../../../host/state/pg/pgDb.js';
import { startPgCluster } from '../../helpers/pgCluster.js';

describe('the PostgreSQL store and text order', () => {
  const cluster = startPgCluster();
  afterAll(() => cluster.stop());
  const url = (name: string) => cluster.url.replace('/paddock?', `/${name}?`);

  it('opens a byte-ordered (C) database, where "run-a" < "run_B" < "run_a" as in SQLite', () => {
    const db = new PgDb(url('paddock'));
    try {
      const sorted = db
        .prepare("SELECT id FROM (VALUES ('run-a'), ('run_a'), ('run_B')) AS t (id) ORDER BY id")
        .pluck()
        .all();
      expect(sorted).toEqual(['run-a', 'run_B', 'run_a']); // '-' 0x2d < 'B' 0x42 < '_' 0x5f < 'a' 0x61
    } finally {
      db.close();
    }
  });

  it('refuses a database collated by language, naming the collation and the fix', () => {
    new PgDb(url('paddock'))
      .exec("CREATE DATABASE english TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'")
      .close();
    expect(() => new PgDb(url('english'))).toThrow(/provider i\).*byte order.*LC_COLLATE 'C'/s);
  });
});
