import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../config/packageRoot.js';
import { HostError } from '../errors.js';
import { dialectOf, type Db, type Dialect } from './db.js';

/** One schema migration: a version number, a name, and SQL. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

const MIGRATIONS_DIR = join(PACKAGE_ROOT, 'host/state/migrations/');
/** PostgreSQL's own files, with SQLite's version numbers (docs/scale-out.md §2, decision PG4). */
const PG_MIGRATIONS_DIR = join(MIGRATIONS_DIR, 'pg/');

/** The migrations shipped with this host for a dialect: `migrations[/pg]/NNNN_name.sql`, in version order. */
export function builtinMigrations(dialect: Dialect = 'sqlite'): Migration[] {
  const dir = dialect === 'postgres' ? PG_MIGRATIONS_DIR : MIGRATIONS_DIR;
  return readdirSync(dir)
    .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((file) => ({
      version: Number(file.slice(0, 4)),
      name: file.slice(5, -4),
      sql: readFileSync(dir + file, 'utf8'),
    }));
}

/**
 * Apply every migration newer than the database, each in its own transaction with its
 * `schema_migrations` row. A failure rolls that migration back, changes nothing, and throws
 * `MIGRATION_FAILED` naming it. A database that has a version this code does not know is refused.
 */
export function migrate(db: Db, migrations: Migration[] = builtinMigrations(dialectOf(db))): { applied: number[] } {
  // On PostgreSQL only when missing: `CREATE … IF NOT EXISTS` still needs CREATE on the schema, which a host connected
  // as the least-privilege role of docs/admin-guide.md ("PostgreSQL") does not hold.
  const exists =
    dialectOf(db) === 'postgres' &&
    db.prepare("SELECT to_regclass('schema_migrations') IS NOT NULL").pluck().get() === 1;
  // In a transaction: on PostgreSQL it takes the writer lock, so hosts starting together do not race on the table.
  if (!exists)
    db.transaction(() =>
      db.exec(
        'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, ' +
          'applied_at TEXT NOT NULL)',
      ),
    )();
  const done = new Set(db.prepare('SELECT version FROM schema_migrations').pluck().all() as number[]);
  const known = new Set(migrations.map((m) => m.version));
  const unknown = [...done].filter((v) => !known.has(v));
  if (unknown.length > 0) {
    throw new HostError(
      'MIGRATION_FAILED',
      `the state database has schema version ${Math.max(...unknown)}, newer than this paddock knows; upgrade paddock`,
      {
        versions: unknown,
      },
    );
  }
  const applied: number[] = [];
  for (const m of migrations) {
    if (done.has(m.version)) continue;
    let ran = false;
    try {
      ran = db.transaction(() => {
        // Another process may have applied it since `done` was read (several hosts starting on one PostgreSQL).
        if (db.prepare('SELECT 1 FROM schema_migrations WHERE version = ?').get(m.version) !== undefined) return false;
        db.exec(m.sql);
        db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
          m.version,
          m.name,
          new Date().toISOString(),
        );
        return true;
      })();
    } catch (error) {
      throw new HostError(
        'MIGRATION_FAILED',
        `migration ${m.version} (${m.name}) failed and was rolled back: ${(error as Error).message}`,
        {
          version: m.version,
        },
        { cause: error },
      );
    }
    if (ran) applied.push(m.version);
  }
  return { applied };
}
