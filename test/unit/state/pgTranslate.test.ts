// The mechanical translation of the store's SQL for PostgreSQL (host/state/pg/translate.ts, docs/scale-out.md §2),
// and the rule that every SQLite migration has its PostgreSQL twin of the same version.
import { describe, expect, it } from 'vitest';
import { builtinMigrations } from '../../../host/state/migrate.js';
import { translateSql } from '../../../host/state/pg/translate.js';

describe('translateSql', () => {
  it('numbers positional parameters in order', () => {
    expect(translateSql('SELECT * FROM runs WHERE id = ? AND status IN (?, ?) LIMIT ?')).toEqual({
      text: 'SELECT * FROM runs WHERE id = $1 AND status IN ($2, $3) LIMIT $4',
      count: 4,
      names: [],
    });
  });

  it('turns named parameters into numbered ones, a repeated name into one parameter', () => {
    const t = translateSql('INSERT INTO audit (seq, prev) VALUES (@seq, @prev) -- @seq again: @seq\n AND @seq > 0');
    expect(t.text).toBe('INSERT INTO audit (seq, prev) VALUES ($1, $2) -- @seq again: @seq\n AND $1 > 0');
    expect(t.names).toEqual(['seq', 'prev']);
    expect(t.count).toBe(2);
  });

  it('leaves literals, quoted names and comments alone', () => {
    const sql = `SELECT 'is it? @no', "odd?name" FROM t /* ? @x */ WHERE a = ? AND b = 'it''s ?'`;
    expect(translateSql(sql).text).toBe(
      `SELECT 'is it? @no', "odd?name" FROM t /* ? @x */ WHERE a = $1 AND b = 'it''s ?'`,
    );
  });

  it('quotes camelCase aliases (PostgreSQL would fold them to lower case), not plain or upper-case ones', () => {
    expect(translateSql('SELECT run_id AS runId, seq AS n, x AS ALLCAPS, webhook_id as webhookId FROM t').text).toBe(
      'SELECT run_id AS "runId", seq AS n, x AS ALLCAPS, webhook_id as "webhookId" FROM t',
    );
  });

  it('turns INSERT OR IGNORE into ON CONFLICT DO NOTHING, before RETURNING', () => {
    expect(translateSql('INSERT OR IGNORE INTO c (seq) VALUES (?)').text).toBe(
      'INSERT INTO c (seq) VALUES ($1) ON CONFLICT DO NOTHING',
    );
    expect(translateSql('insert or ignore into c (seq) values (?) RETURNING seq;').text).toBe(
      'insert INTO c (seq) values ($1) ON CONFLICT DO NOTHING RETURNING seq',
    );
  });

  it("drops SQLite's planner hints: INDEXED BY, and CROSS JOIN's fixed order (PostgreSQL refuses ON after it)", () => {
    expect(
      translateSql('SELECT * FROM runs INDEXED BY runs_ended_window CROSS JOIN sessions s ON s.id = session_id').text,
    ).toBe('SELECT * FROM runs JOIN sessions s ON s.id = session_id');
    expect(translateSql("SELECT 'INDEXED BY x', indexed_by FROM t").text).toBe(
      "SELECT 'INDEXED BY x', indexed_by FROM t",
    );
  });

  it('refuses a statement mixing ? and @name, as better-sqlite3 does', () => {
    expect(() => translateSql('SELECT ? + @a')).toThrow(/mixes/);
  });
});

describe('PostgreSQL migrations', () => {
  it('exist for every SQLite version, under the same number and name (one version means one schema on both)', () => {
    const pick = (dialect: 'sqlite' | 'postgres') => builtinMigrations(dialect).map((m) => `${m.version} ${m.name}`);
    expect(pick('postgres')).toEqual(pick('sqlite'));
  });
});
