import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

// docs/state.md "Who owns which table": every SQL statement of the host lives in host/state/.
const ROOT = join(import.meta.dirname, '..', '..', '..');
const SCANNED = ['host', 'sdk', 'runners'];

/** What betrays SQL (or a way around host/state/) in a source line. */
const RULES: { name: string; test: (line: string) => boolean }[] = [
  // A statement is prepared from SQL text (a literal or a `sql` variable), or on a connection; a
  // sandbox backend's `prepare(request)` is neither.
  {
    name: 'prepares a statement',
    test: (l) =>
      /\.prepare\s*\(\s*(['"`]|sql\b)/.test(l) || /\b\w*(db|Db|database|Database|sqlite|conn)\s*\.prepare\s*\(/.test(l),
  },
  { name: 'sets a pragma', test: (l) => /\.pragma\s*\(/.test(l) },
  // RegExp#exec takes a string variable; a database's exec takes SQL text (a literal) or is called on a db.
  {
    name: 'executes SQL text',
    test: (l) => /\.exec\s*\(\s*['"`]/.test(l) || /\b\w*(db|Db|database|Database|sqlite)\s*\.exec\s*\(/.test(l),
  },
  {
    name: 'holds an SQL statement',
    test: (l) =>
      /['"`]\s*(SELECT\s+[\w*(]|INSERT\s+(OR\s+\w+\s+)?INTO\s|UPDATE\s+\w+\s+SET\s|DELETE\s+FROM\s)/.test(l) ||
      /['"`]\s*(CREATE\s+(TABLE|INDEX|TRIGGER|VIRTUAL)\s|DROP\s+(TABLE|INDEX|TRIGGER)\s)/.test(l),
  },
  { name: 'opens SQLite itself', test: (l) => /from\s+['"]better-sqlite3['"]/.test(l) },
  // The PostgreSQL drivers are host/state/'s too (pg/pgDb.ts; docs/scale-out.md), by import or by require.
  { name: 'opens PostgreSQL itself', test: (l) => /(from\s+|require\(\s*)['"](pg|pg-native|libpq)['"]/.test(l) },
  {
    name: "reaches the store's connection",
    test: (l) => /\bdbOf\s*\(|\.db\s*\.\s*(prepare|exec|pragma|transaction)\b/.test(l),
  },
];

function* sources(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist') continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* sources(path);
    else if (/\.(ts|mts|js|mjs)$/.test(name) && !name.endsWith('.d.ts')) yield path;
  }
}

/** `file:line: rule` for every offending line of `text`. */
function offences(file: string, text: string): string[] {
  return text
    .split('\n')
    .flatMap((line, i) =>
      RULES.filter((r) => r.test(line)).map((r) => `${file}:${i + 1}: ${r.name}: ${line.trim().slice(0, 100)}`),
    );
}

describe('SQL ownership', () => {
  it('no file outside host/state/ holds SQL or reaches a database connection', () => {
    const found: string[] = [];
    let scanned = 0;
    for (const top of SCANNED) {
      for (const path of sources(join(ROOT, top))) {
        const file = relative(ROOT, path);
        if (file.startsWith('host/state/')) continue;
        scanned += 1;
        found.push(...offences(file, readFileSync(path, 'utf8')));
      }
    }
    expect(scanned).toBeGreaterThan(100);
    expect(found).toEqual([]);
  });

  it('flags each shape of SQL a caller could write, and not a regular expression', () => {
    const planted = [
      "const n = store.db.prepare('SELECT 1').get();",
      "db.exec('DROP TABLE events');",
      'conn.exec(`DELETE FROM runs`);',
      "const sql = 'INSERT OR REPLACE INTO skill_digests (skill_id) VALUES (?)';",
      'const q = `UPDATE runs SET status = ?`;',
      "database.pragma('data_version');",
      "import Database from 'better-sqlite3';",
      "import pg from 'pg';",
      "const Client = require('pg-native') as new () => Native;",
      'const conn = dbOf(store);',
      'const rows = conn.prepare(sql).all();',
      'const stmt = db.prepare(',
    ];
    for (const line of planted) expect(offences('planted.ts', line).length, line).toBeGreaterThan(0);
    const innocent = [
      'const m = /^Bearer\\s+(\\S+)$/i.exec(auth);',
      'for (let m = pattern.exec(text); m; m = pattern.exec(text)) {}',
      'const runId = RUN_ID_PREFIX.exec(name)?.[1];',
      "out('select a binding, then update it');",
      'const prepared = sandboxBackend(binding.sandbox).prepare(',
      'return sandboxBackend(input.backend).prepare(input, machine);',
    ];
    for (const line of innocent) expect(offences('innocent.ts', line), line).toEqual([]);
  });

  it('keeps the store connection private to the type checker', () => {
    const store = readFileSync(join(ROOT, 'host/state/store.ts'), 'utf8');
    expect(store).toMatch(/private readonly db: Db/);
  });
});
