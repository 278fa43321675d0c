/**
 * The admin console's built files (docs/console.md §2), read once from `dist/console/` (scripts/build.mjs) and kept
 * in memory with their gzip form: a handful of small files, served without touching the disk again.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { PACKAGE_ROOT } from '../../config/packageRoot.js';
import { HostError } from '../../errors.js';

/** Where the build puts the console. */
export const CONSOLE_DIR = join(PACKAGE_ROOT, 'dist', 'console');

/** One file of the console, as served. */
export interface ConsoleFile {
  body: Buffer;
  gzip: Buffer;
  type: string;
}

/** The shell (`index.html`) and the hashed assets by file name. */
export interface ConsoleFiles {
  shell: ConsoleFile;
  assets: ReadonlyMap<string, ConsoleFile>;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
};

function file(path: string): ConsoleFile {
  const body = readFileSync(path);
  return { body, gzip: gzipSync(body, { level: 9 }), type: TYPES[extname(path)] ?? 'application/octet-stream' };
}

/** Read the built console from `dir`; a missing build is an error that says how to make it. */
export function loadConsoleFiles(dir = CONSOLE_DIR): ConsoleFiles {
  let names: string[];
  try {
    names = readdirSync(join(dir, 'assets'));
    readFileSync(join(dir, 'index.html'));
  } catch {
    throw new HostError(
      'NOT_FOUND',
      `the console is not built (${dir} has no index.html or assets/): run npm run build`,
    );
  }
  const assets = new Map<string, ConsoleFile>();
  for (const name of names) if (TYPES[extname(name)]) assets.set(name, file(join(dir, 'assets', name)));
  return { shell: file(join(dir, 'index.html')), assets };
}
