import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { basename, join } from 'node:path';
import { build } from 'esbuild';
import { repoPath } from './fixtures.js';

// Bundled CJS dependencies may call require(); give the ESM output one.
const REQUIRE_SHIM =
  "import { createRequire as __testCreateRequire } from 'node:module'; " +
  'const require = __testCreateRequire(import.meta.url);';
/** Left out of the bundle: a native addon, and esbuild, which finds its own binary next to its package. */
const NOT_BUNDLED = ['better-sqlite3', 'esbuild'];

/**
 * A host process entry (a test fixture that runs the real CLI, e.g. test/fixtures/crashingHost.ts) bundled into one
 * file WITH paddock's runtime dependencies (zod, the MCP SDK, ajv, pino…), so a test that starts hundreds of host
 * processes does not pay Node's per-file ESM loading of those packages at every start (≈0.6 s of CPU each on the
 * 2-core machine; compileNodeEntry keeps them external, as runner bundles must). Same host code, same dependency
 * versions; only how they are laid out on disk differs. Written to node_modules/.cache so the two left-out packages
 * resolve from the repo; content-addressed, so a changed source never starts an old bundle.
 */
export async function bundleHostEntry(entry: string): Promise<string> {
  const result = await build({
    entryPoints: [repoPath(entry)],
    absWorkingDir: repoPath('.'),
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    write: false,
    logLevel: 'silent',
    banner: { js: REQUIRE_SHIM },
    external: [...builtinModules, 'node:*', ...NOT_BUNDLED],
    tsconfigRaw: { compilerOptions: { experimentalDecorators: true, verbatimModuleSyntax: true } },
  });
  const text = result.outputFiles[0]!.text;
  const dir = repoPath('node_modules/.cache/paddock/test-hosts');
  const hash = createHash('sha256').update(text).digest('hex').slice(0, 16);
  const outFile = join(dir, `${basename(entry).replace(/\.ts$/, '')}-${hash}.mjs`);
  if (!existsSync(outFile)) {
    mkdirSync(dir, { recursive: true });
    const tmp = `${outFile}.${process.pid}.tmp`;
    writeFileSync(tmp, text);
    renameSync(tmp, outFile); // atomic: a concurrent test file never starts a half-written bundle
  }
  return outFile;
}
