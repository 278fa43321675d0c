// `npm run build`: compiles the host and the SDK to dist/ (tsconfig.build.json), bundles the CLI from that
// (dist/cli/, what bin/paddock.js runs) and the admin console (dist/console/, docs/console.md), and records each
// built-in runner folder's tree (dist/runner-digests.json, docs/runner-packages.md §3), only when an input
// changed since the last build (a content hash of every input, kept in dist/.build-hash), so set-up,
// `npm test` and vitest's global setup can call it on every start for about 0.1 s. `--force` rebuilds.
// The new tree is compiled beside dist/ and swapped in by rename: a reader never sees a half-written
// dist/, and a file deleted from the sources leaves no stale output behind.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { spawnSync } from 'node:child_process';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const OUT = join(ROOT, 'dist');
const STAMP = '.build-hash';
/** Folders whose sources are built, and the files that change how they are built. */
const SOURCE_DIRS = ['host', 'sdk', 'console'];
const CONFIG_FILES = ['tsconfig.json', 'tsconfig.build.json', 'package-lock.json', 'scripts/build.mjs'];
/** What counts as a source file: TypeScript, and the console's markup, styles and its tsconfig. */
const SOURCE_FILE = /\.([cm]?ts|tsx|css|html|json)$/;
/** The built-in runners: every file of them is an input, since dist/runner-digests.json records every file. */
const RUNNERS_DIR = 'runners';

/** Every input of the build, sorted, as paths relative to the package root. */
function inputs() {
  const files = [...CONFIG_FILES];
  const walk = (dir, wanted) => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const rel = join(dir, entry.name);
      if (entry.isDirectory()) walk(rel, wanted);
      else if (wanted(entry.name)) files.push(rel);
    }
  };
  for (const dir of SOURCE_DIRS) walk(dir, (name) => SOURCE_FILE.test(name));
  walk(RUNNERS_DIR, () => true);
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

/** Packages the CLI bundle leaves to Node: native addons and binaries, found on disk at run time. */
const CLI_EXTERNAL = ['better-sqlite3', 'esbuild'];

/**
 * zod's `locales` namespace (every language's error messages, ~360 KB: half of zod in the bundle) reduced to the
 * English one, which zod itself registers and paddock uses; nothing in paddock calls `z.locales`. Each CLI command
 * compiles its modules at every start (Node 20 has no compile cache), so that is ~10% of a dispatch's JavaScript.
 */
const zodEnglishOnly = {
  name: 'zod-english-only',
  setup(build) {
    build.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      /[\\/]node_modules[\\/]zod[\\/]v4[\\/](core|classic)$/.test(args.resolveDir)
        ? { path: join(args.resolveDir, '..', 'locales', 'english-only'), namespace: 'zod-en' }
        : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'zod-en' }, (args) => ({
      contents: "export { default as en } from './en.js';\n",
      resolveDir: dirname(args.path),
      loader: 'js',
    }));
  },
};

/**
 * Bundle the compiled CLI (`<out>/host/cli/entry.js`) with its dependencies into `<out>/cli/`: one file per lazily
 * imported command plus shared chunks, and `meta.json` (esbuild's metafile: which source module is in which chunk).
 * Why: Node 20 has no module compile cache, and resolving and reading ~1 000 module files cost about as much as the
 * command itself (docs/benchmarks.md, "CLI start-up"); the compiled tree stays for the package exports.
 */
async function bundleCli(out) {
  const esbuild = createRequire(join(ROOT, 'package.json'))('esbuild');
  const result = await esbuild.build({
    // Paths in meta.json relative to dist/ (`host/cli/main.js`, `../node_modules/zod/…`), wherever it was built.
    absWorkingDir: out,
    entryPoints: ['host/cli/entry.js'],
    outdir: 'cli',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external: CLI_EXTERNAL,
    metafile: true,
    logLevel: 'error',
    plugins: [zodEnglishOnly],
    // CommonJS dependencies call require() for Node's own modules; an ESM bundle has no require of its own.
    banner: {
      js: [
        "import { createRequire as __paddockRequire } from 'node:module';",
        'const require = __paddockRequire(import.meta.url);',
      ].join('\n'),
    },
  });
  writeFileSync(join(out, 'cli', 'meta.json'), JSON.stringify(result.metafile));
}

/**
 * Bundle the admin console (`console/main.tsx`, Preact) into `<out>/console/`: `assets/main-<hash>.js` and
 * `.css` (content-hashed names, so the server may let browsers cache them for good), and `index.html`, the shell
 * that loads them (no inline script or style: the console's CSP forbids both). Everything ships in the package.
 */
async function bundleConsole(out) {
  const esbuild = createRequire(join(ROOT, 'package.json'))('esbuild');
  const dir = join(out, 'console');
  const result = await esbuild.build({
    absWorkingDir: ROOT,
    entryPoints: ['console/main.tsx'],
    outdir: join(dir, 'assets'),
    entryNames: '[name]-[hash]',
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: ['chrome110', 'firefox110', 'safari16'],
    tsconfig: 'console/tsconfig.json',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    minify: true,
    legalComments: 'linked',
    metafile: true,
    logLevel: 'error',
  });
  const outputs = Object.keys(result.metafile.outputs).map((path) => relative(join(dir, 'assets'), join(ROOT, path)));
  const script = outputs.find((name) => name.endsWith('.js'));
  const style = outputs.find((name) => name.endsWith('.css'));
  if (!script || !style) throw new Error(`the console bundle lacks a script or a stylesheet (${outputs.join(', ')})`);
  const shell = readFileSync(join(ROOT, 'console', 'index.html'), 'utf8')
    .replace('%SCRIPT%', `/console/assets/${script}`)
    .replace('%STYLE%', `/console/assets/${style}`);
  writeFileSync(join(dir, 'index.html'), shell);
}

/**
 * Write `<out>/runner-digests.json`: each built-in runner folder's tree digest and listing, made by the host's own
 * code just compiled into `<out>` (host/packages/builtinDigests.ts), which the host checks each built-in runner
 * against before its runs.
 */
async function recordRunnerDigests(out) {
  const { builtinDigestsOf } = await import(pathToFileURL(join(out, 'host', 'packages', 'builtinDigests.js')).href);
  writeFileSync(join(out, 'runner-digests.json'), `${JSON.stringify(builtinDigestsOf(join(ROOT, RUNNERS_DIR)))}\n`);
}

/** Build dist/ unless it is up to date; resolves to what it did. Throws when tsc fails (dist/ is left as it was). */
export async function build({ force = false, log = (line) => console.error(line) } = {}) {
  const hash = sourceHash();
  if (!force && upToDate(hash)) return 'up to date';
  const tmp = join(ROOT, `dist.${process.pid}.tmp`);
  rmSync(tmp, { recursive: true, force: true });
  log(
    'build: compiling host/ and sdk/ to dist/ (tsc), bundling the CLI to dist/cli/ and the console to dist/console/, ' +
      "recording the built-in runners' digests",
  );
  const tsc = createRequire(join(ROOT, 'package.json')).resolve('typescript/bin/tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', tmp], {
    cwd: ROOT,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (result.status !== 0) {
    rmSync(tmp, { recursive: true, force: true });
    throw new Error(`build: tsc failed (exit ${result.status ?? result.signal}); dist/ left as it was`);
  }
  try {
    await bundleCli(tmp);
  } catch (error) {
    rmSync(tmp, { recursive: true, force: true });
    throw new Error(`build: bundling the CLI failed (${error.message}); dist/ left as it was`);
  }
  try {
    await bundleConsole(tmp);
  } catch (error) {
    rmSync(tmp, { recursive: true, force: true });
    throw new Error(`build: bundling the console failed (${error.message}); dist/ left as it was`);
  }
  try {
    await recordRunnerDigests(tmp);
  } catch (error) {
    rmSync(tmp, { recursive: true, force: true });
    throw new Error(`build: recording the built-in runners' digests failed (${error.message}); dist/ left as it was`);
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
  build({ force: process.argv.includes('--force') }).catch((error) => {
    console.error(error.message);
    process.exit(1);
  });
}
