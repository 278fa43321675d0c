// `npm run build`: compiles the host and the SDK to dist/ (tsconfig.build.json), only when an input
// changed since the last build (a content hash of every input, kept in dist/.build-hash), so set-up,
// `npm test` and vitest's global setup can call it on every start for about 0.1 s. `--force` rebuilds.
// The new tree is compiled beside dist/ and swapped in by rename: a reader never sees a half-written
// dist/, and a file deleted from the sources leaves no stale output behind.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnSync } from 'node:child_process';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const OUT = join(ROOT, 'dist');
const STAMP = '.build-hash';
/** Folders whose TypeScript is compiled, and the files that change how it is compiled. */
const SOURCE_DIRS = ['host', 'sdk'];
const CONFIG_FILES = ['tsconfig.json', 'tsconfig.build.json', 'package-lock.json'];

/** Every input of the build, sorted, as paths relative to the package root. */
function inputs() {
  const files = [...CONFIG_FILES];
  const walk = (dir) => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const rel = join(dir, entry.name);
      if (entry.isDirectory()) walk(rel);
      else if (/\.[cm]?ts$/.test(entry.name)) files.push(rel);
    }
  };
  SOURCE_DIRS.forEach(walk);
  return files.sort();
}

/** sha256 over every input's path and content. */
export function sourceHash() {
  const hash = createHash('sha256');
  for (const file of inputs())
    hash
      .update(`${file}\0`)
      .update(readFileSync(join(ROOT, file)))
      .update('\0');
  return hash.digest('hex');
}

/** Whether dist/ was built from exactly the current sources. */
export function upToDate(hash = sourceHash()) {
  try {
    return readFileSync(join(OUT, STAMP), 'utf8').trim() === hash;
  } catch {
    return false;
  }
}

/** Build dist/ unless it is up to date; returns what it did. Throws when tsc fails (dist/ is left as it was). */
export function build({ force = false, log = (line) => console.error(line) } = {}) {
  const hash = sourceHash();
  if (!force && upToDate(hash)) return 'up to date';
  const tmp = join(ROOT, `dist.${process.pid}.tmp`);
  rmSync(tmp, { recursive: true, force: true });
  log('build: compiling host/ and sdk/ to dist/ (tsc -p tsconfig.build.json)');
  const tsc = createRequire(join(ROOT, 'package.json')).resolve('typescript/bin/tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', tmp], {
    cwd: ROOT,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (result.status !== 0) {
    rmSync(tmp, { recursive: true, force: true });
    throw new Error(`build: tsc failed (exit ${result.status ?? result.signal}); dist/ left as it was`);
  }
  writeFileSync(join(tmp, STAMP), `${hash}\n`);
  const old = join(ROOT, `dist.${process.pid}.old`);
  if (existsSync(OUT)) renameSync(OUT, old);
  renameSync(tmp, OUT);
  rmSync(old, { recursive: true, force: true });
  log(`build: dist/ ready (${relative(ROOT, OUT)}/${STAMP} ${hash.slice(0, 12)})`);
  return 'built';
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  try {
    build({ force: process.argv.includes('--force') });
  } catch (error) {
    console.error(error.message);
    process.exit(1);
  }
}
