import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { KbIndexFile } from '../../state/kbIndex.js';

/** A retrieved chunk with its source. */
export interface KbChunk {
  text: string;
  source: { id: string; title?: string; uri?: string };
  score?: number;
}

const EXTENSIONS = /\.(md|markdown|txt|rst)$/i;
const MAX_FILE_BYTES = 5 * 1024 * 1024;
const MAX_CHUNK_CHARS = 1_200;

/** Files of a folder worth indexing: documents, no links followed, no dot-folders. */
function walk(root: string, dir = root, out = new Map<string, { size: number; mtimeMs: number }>()) {
  for (const name of readdirSync(dir)) {
    if (name.startsWith('.')) continue;
    const path = join(dir, name);
    const stat = lstatSync(path);
    if (stat.isSymbolicLink()) continue;
    if (stat.isDirectory()) walk(root, path, out);
    else if (stat.isFile() && EXTENSIONS.test(name) && stat.size <= MAX_FILE_BYTES)
      out.set(relative(root, path), { size: stat.size, mtimeMs: Math.trunc(stat.mtimeMs) });
  }
  return out;
}

/** Split a document into chunks at headings and, past the size cap, at paragraph breaks. */
export function chunkDocument(text: string): string[] {
  const chunks: string[] = [];
  let current = '';
  const flush = () => {
    if (current.trim()) chunks.push(current.trim());
    current = '';
  };
  for (const paragraph of text.split(/\n\s*\n/)) {
    if (/^#{1,6}\s/.test(paragraph)) flush();
    if (current.length + paragraph.length > MAX_CHUNK_CHARS) flush();
    // A single paragraph longer than the cap is cut into pieces.
    for (let i = 0; i < paragraph.length; i += MAX_CHUNK_CHARS) {
      const piece = paragraph.slice(i, i + MAX_CHUNK_CHARS);
      current += (current ? '\n\n' : '') + piece;
      if (piece.length === MAX_CHUNK_CHARS) flush();
    }
  }
  flush();
  return chunks;
}

/** The title of a document: its first heading, else its file name. */
function titleOf(text: string, path: string): string {
  return /^#{1,6}\s+(.+)$/m.exec(text)?.[1]?.trim() ?? basename(path);
}

/** The words of a query as an FTS5 expression: each word quoted, any of them may match. */
export function ftsQuery(query: string): string | undefined {
  const words = query.match(/[\p{L}\p{N}_]+/gu);
  return words?.length ? words.map((w) => `"${w}"`).join(' OR ') : undefined;
}

/**
 * The embedded knowledge base: a folder of documents indexed with SQLite FTS5 in its own
 * database file. Every search first brings the index up to date with the folder (new, changed
 * and deleted files by size and mtime), so answers always reflect what is on disk.
 */
export class FolderIndex {
  private readonly index: KbIndexFile;

  constructor(
    private readonly folder: string,
    indexFile: string,
  ) {
    this.index = new KbIndexFile(indexFile, folder);
  }

  /** Re-index what changed; returns how many files were (re)indexed and removed. */
  sync(): { indexed: number; removed: number } {
    const onDisk = walk(this.folder);
    const known = this.index.files();
    let indexed = 0;
    let removed = 0;
    this.index.transaction(() => {
      for (const path of known.keys()) {
        if (onDisk.has(path)) continue;
        this.index.remove(path);
        removed += 1;
      }
      for (const [path, stat] of onDisk) {
        const before = known.get(path);
        if (before && before.size === stat.size && before.mtimeMs === stat.mtimeMs) continue;
        const text = readFileSync(join(this.folder, path), 'utf8');
        this.index.put(path, stat, titleOf(text, path), chunkDocument(text));
        indexed += 1;
      }
    });
    return { indexed, removed };
  }

  /** The best chunks for a query (bm25; higher score is better). */
  search(query: string, topK: number): KbChunk[] {
    this.sync();
    const match = ftsQuery(query);
    if (!match) return [];
    const rows = this.index.search(match, topK);
    return rows.map((r) => ({
      text: r.text,
      source: { id: `${r.path}#${r.ordinal}`, title: r.title, uri: r.path },
      score: -r.rank,
    }));
  }

  close(): void {
    this.index.close();
  }
}
