/**
 * The SQL fragments whose meaning the two dialects spell differently (docs/scale-out.md §2): each module writes its
 * statement once and takes these pieces by the connection's dialect. What only differs mechanically (placeholders,
 * aliases, `INSERT OR IGNORE`, planner hints) is translated by the adapter instead (pg/translate.ts).
 */
import type { Dialect } from './db.js';

/** A JSON text column's top-level `key` as SQL text: SQLite's `json_extract`, PostgreSQL's `->>` (as its indexes). */
export function jsonText(dialect: Dialect, column: string, key: string): string {
  return dialect === 'postgres' ? `(${column}::json ->> '${key}')` : `json_extract(${column}, '$.${key}')`;
}

/** A JSON text column's top-level `key` as a number (SQLite's `json_extract` keeps the JSON type; `->>` is text). */
export function jsonNumber(dialect: Dialect, column: string, key: string): string {
  return dialect === 'postgres' ? `(${column}::json ->> '${key}')::bigint` : `json_extract(${column}, '$.${key}')`;
}

/** The larger of two values (SQLite's scalar `max(a, b)`, PostgreSQL's `greatest`). Neither may be NULL. */
export function larger(dialect: Dialect, a: string, b: string): string {
  return dialect === 'postgres' ? `greatest(${a}, ${b})` : `max(${a}, ${b})`;
}

/**
 * The tenant a config object's `spec` names (`default` when none), written exactly as the `config_objects_by_tenant`
 * index's expression of each dialect (migration 9), so the index serves it.
 */
export function tenantOfSpec(dialect: Dialect): string {
  return `coalesce(${jsonText(dialect, 'spec', 'tenant')}, 'default')`;
}

/** Milliseconds from ISO time `from` to ISO time `to`, rounded to an integer. */
export function elapsedMs(dialect: Dialect, from: string, to: string): string {
  return dialect === 'postgres'
    ? `CAST(round(extract(epoch from (${to}::timestamptz - ${from}::timestamptz)) * 1000) AS bigint)`
    : `CAST(round((julianday(${to}) - julianday(${from})) * 86400000) AS INTEGER)`;
}

/**
 * A SELECT's row-lock clause (PostgreSQL `FOR UPDATE`, `FOR KEY SHARE`); nothing on SQLite, where a writing
 * transaction holds the whole file (docs/scale-out.md §3, stage 2).
 */
export function rowLock(dialect: Dialect, mode: 'UPDATE' | 'KEY SHARE'): string {
  return dialect === 'postgres' ? ` FOR ${mode}` : '';
}
