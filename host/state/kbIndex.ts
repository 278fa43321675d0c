/**
 * The embedded knowledge base's FTS5 index: its own SQLite file per knowledge base (not the
 * state database), kept here with the rest of the SQL. host/gateway/kb/folderIndex.ts decides
 * what to index; this stores and searches it.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';

/** One stored chunk matched by a search; `rank` is bm25 (lower is better). */
export interface KbIndexHit {
  path: string;
  ordinal: number;
  title: string;
  text: string;
  rank: number;
}

/** One knowledge base index file. */
export class KbIndexFile {
  private readonly db: Database.Database;

  /** Open (or create) the index at `file`; an index of another folder is emptied first. */
  constructor(file: string, folder: string) {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('busy_timeout = 5000');
    this.db.exec(
      `
      CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE ` +
        `IF NOT EXISTS files (path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ms INTEGER NOT NULL, title TEXT ` +
        `NOT NULL);
      CREATE VIRTUAL TABLE IF NOT EXISTS chunks USING fts5(path UNINDEXED, ordinal UNINDEXED, ` +
        `title UNINDEXED, text, tokenize = 'porter unicode61');
    `,
    );
    const indexed = this.db.prepare("SELECT value FROM meta WHERE key = 'folder'").pluck().get() as string | undefined;
    if (indexed !== folder) {
      // The resource now points elsewhere: start over.
      this.db.transaction(() => {
        this.db.exec('DELETE FROM files; DELETE FROM chunks;');
        this.db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('folder', ?)").run(folder);
      })();
    }
  }

  /** Indexed files with the size and mtime they had when indexed. */
  files(): Map<string, { size: number; mtimeMs: number }> {
    return new Map(
      (
        this.db.prepare('SELECT path, size, mtime_ms AS mtimeMs FROM files').all() as {
          path: string;
          size: number;
          mtimeMs: number;
        }[]
      ).map((r) => [r.path, r]),
    );
  }

  /** Run `fn` in one transaction. */
  transaction(fn: () => void): void {
    this.db.transaction(fn)();
  }

  /** Forget a file and its chunks. */
  remove(path: string): void {
    this.db.prepare('DELETE FROM chunks WHERE path = ?').run(path);
    this.db.prepare('DELETE FROM files WHERE path = ?').run(path);
  }

  /** Replace a file's chunks. */
  put(path: string, stat: { size: number; mtimeMs: number }, title: string, chunks: string[]): void {
    this.db.prepare('DELETE FROM chunks WHERE path = ?').run(path);
    const insert = this.db.prepare('INSERT INTO chunks (path, ordinal, title, text) VALUES (?, ?, ?, ?)');
    chunks.forEach((chunk, i) => insert.run(path, i, title, chunk));
    this.db
      .prepare('INSERT OR REPLACE INTO files (path, size, mtime_ms, title) VALUES (?, ?, ?, ?)')
      .run(path, stat.size, stat.mtimeMs, title);
  }

  /** The best `topK` chunks for an FTS5 match expression. */
  search(match: string, topK: number): KbIndexHit[] {
    return this.db
      .prepare(
        'SELECT path, ordinal, title, text, bm25(chunks) AS rank FROM chunks WHERE chunks MATCH ? ORDER BY ' +
          'rank LIMIT ?',
      )
      .all(match, topK) as KbIndexHit[];
  }

  /** Close the file. */
  close(): void {
    this.db.close();
  }
}
