/**
 * The mechanical half of "one SQL set" (docs/scale-out.md §2): a statement written for better-sqlite3 becomes one
 * PostgreSQL runs the same way. What differs in meaning is written per dialect in the module that owns it, not here.
 */

/** A statement as PostgreSQL takes it, and how to lay out better-sqlite3-style arguments for it. */
export interface TranslatedSql {
  text: string;
  /** How many `$n` parameters the text has. */
  count: number;
  /** For named parameters (`@name`): the name of each `$n`, in order; empty for positional `?`. */
  names: string[];
}

const IDENT = /[A-Za-z0-9_]/;

/**
 * Translate one statement: `?` → `$1, $2, …`; `@name` → `$n` (a name used twice is one parameter); a camelCase alias
 * after `AS` quoted (PostgreSQL folds unquoted names to lower case, and the code reads `runId`, not `runid`);
 * `INSERT OR IGNORE INTO` → `INSERT INTO … ON CONFLICT DO NOTHING`; SQLite's planner hints dropped: `INDEXED BY
 * <index>` (PostgreSQL picks its own plan) and `CROSS JOIN … ON` → `JOIN … ON` (SQLite's CROSS JOIN is an inner join
 * whose table order is fixed; PostgreSQL allows no ON after CROSS JOIN). String literals, quoted identifiers and
 * comments are copied untouched. Mixing `?` and `@name` in one statement is refused, as better-sqlite3 refuses it.
 */
export function translateSql(sql: string): TranslatedSql {
  let out = '';
  let positional = 0;
  const names: string[] = [];
  let orIgnore = false;
  let i = 0;
  while (i < sql.length) {
    const c = sql[i]!;
    if (c === "'" || c === '"') {
      const end = closingQuote(sql, i, c);
      out += sql.slice(i, end);
      i = end;
    } else if (c === '-' && sql[i + 1] === '-') {
      const end = sql.indexOf('\n', i);
      const stop = end === -1 ? sql.length : end;
      out += sql.slice(i, stop);
      i = stop;
    } else if (c === '/' && sql[i + 1] === '*') {
      const end = sql.indexOf('*/', i + 2);
      const stop = end === -1 ? sql.length : end + 2;
      out += sql.slice(i, stop);
      i = stop;
    } else if (c === '?') {
      positional += 1;
      out += `$${positional}`;
      i += 1;
    } else if (c === '@' && IDENT.test(sql[i + 1] ?? '')) {
      let j = i + 1;
      while (j < sql.length && IDENT.test(sql[j]!)) j += 1;
      const name = sql.slice(i + 1, j);
      let index = names.indexOf(name);
      if (index === -1) index = names.push(name) - 1;
      out += `$${index + 1}`;
      i = j;
    } else if (IDENT.test(c) && !IDENT.test(sql[i - 1] ?? ' ')) {
      let j = i;
      while (j < sql.length && IDENT.test(sql[j]!)) j += 1;
      const word = sql.slice(i, j);
      const upper = word.toUpperCase();
      if (upper === 'AS') {
        // `AS runId` → `AS "runId"`: only an alias with an upper-case letter needs it.
        const m = /^(\s+)([A-Za-z_][A-Za-z0-9_]*)/.exec(sql.slice(j));
        if (m && /[A-Z]/.test(m[2]!) && !/^[A-Z_]+$/.test(m[2]!)) {
          out += `${word}${m[1]}"${m[2]}"`;
          i = j + m[0].length;
          continue;
        }
      } else if (upper === 'INDEXED') {
        const m = /^\s+BY\s+[A-Za-z_][A-Za-z0-9_]*/i.exec(sql.slice(j));
        if (m) {
          i = j + m[0].length;
          out = out.replace(/\s+$/, '');
          continue;
        }
      } else if (upper === 'CROSS') {
        const m = /^\s+JOIN\b/i.exec(sql.slice(j));
        if (m) {
          out += 'JOIN';
          i = j + m[0].length;
          continue;
        }
      } else if (upper === 'INSERT') {
        const m = /^\s+OR\s+IGNORE\s+INTO\b/i.exec(sql.slice(j));
        if (m) {
          orIgnore = true;
          out += `${word} INTO`;
          i = j + m[0].length;
          continue;
        }
      }
      out += word;
      i = j;
    } else {
      out += c;
      i += 1;
    }
  }
  if (positional > 0 && names.length > 0) throw new Error('a statement mixes ? and @name parameters');
  if (orIgnore) out = addOnConflictDoNothing(out);
  return { text: out, count: positional || names.length, names };
}

/** The index just past the quote that closes the one at `start` (a doubled quote is an escaped one). */
function closingQuote(sql: string, start: number, quote: string): number {
  let i = start + 1;
  while (i < sql.length) {
    if (sql[i] === quote) {
      if (sql[i + 1] === quote) i += 2;
      else return i + 1;
    } else i += 1;
  }
  return sql.length;
}

/** `… ON CONFLICT DO NOTHING`, before a `RETURNING` clause when there is one (outside literals: checked by caller). */
function addOnConflictDoNothing(text: string): string {
  const trimmed = text.replace(/;\s*$/, '');
  const returning = /\sRETURNING\s/i.exec(trimmed);
  if (!returning) return `${trimmed} ON CONFLICT DO NOTHING`;
  return `${trimmed.slice(0, returning.index)} ON CONFLICT DO NOTHING${trimmed.slice(returning.index)}`;
}
