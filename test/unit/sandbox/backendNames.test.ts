// No code outside host/sandbox/backends/ decides anything by comparing a backend's name: every
// per-backend decision is a member of SandboxBackend (host/sandbox/backend.ts). A source scan,
// like the import-graph test.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../helpers/fixtures.js';

const SCANNED = ['host', 'sdk', 'runners', 'examples'];
const NAME = `['"\`](?:bwrap|process)['"\`]`;
/** A comparison with a backend name, either side, a `case`, or a membership test on a literal list or set. */
const BRANCH = new RegExp(
  [
    `[!=]==?\\s*${NAME}`,
    `${NAME}\\s*[!=]==?`,
    `\\bcase\\s+${NAME}`,
    `\\.(?:includes|has|indexOf)\\(\\s*${NAME}`,
    `\\[[^\\]]*${NAME}[^\\]]*\\]\\s*\\.(?:includes|indexOf)\\(`,
  ].join('|'),
);

/**
 * Where comparing the name is the point, named one by one: parsing `--sandbox` (a string from the
 * command line, checked before it is a Backend).
 */
const ALLOWED: Record<string, string> = {
  'host/cli/commandTable.ts': "sandbox !== 'process' && sandbox !== 'bwrap'",
};

/**
 * Lane A's run pipeline replaces host/runs/runService.ts while this lands: its two comparisons
 * go at the merge (docs/decisions.md, "Issue 12 — backend"). Listed so this test fails once they
 * are gone and the entry is not removed, as well as on any new one.
 */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (name === 'node_modules' || name === 'dist') return [];
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.(ts|mts|js|mjs)$/.test(name) ? [path] : [];
  });
}

/** Lines of `source` that branch on a backend name. */
export function nameBranches(source: string): string[] {
  return source.split('\n').filter((line) => BRANCH.test(line));
}

const hits = SCANNED.flatMap((top) => sourceFiles(join(REPO_ROOT, top)))
  .map((file) => ({ file: relative(REPO_ROOT, file), lines: nameBranches(readFileSync(file, 'utf8')) }))
  .filter((f) => f.lines.length > 0 && !f.file.startsWith('host/sandbox/backends/'));

describe('no code branches on a sandbox backend name outside its backend', () => {
  it('sees every shape of a branch (the scan is not vacuous)', () => {
    const shapes = [
      "if (backend === 'bwrap') x();",
      "const weak = request.backend !== 'process';",
      "const b = 'bwrap' == name;",
      'switch (name) { case "process": break; }',
      "if (['bwrap'].includes(b)) {}",
      'const s = b === `bwrap` ? 1 : 0;',
      "new Set(['x']).has('process')",
    ];
    for (const shape of shapes) expect(nameBranches(shape), shape).toHaveLength(1);
    // Naming a backend is not branching on it.
    for (const fine of [
      "sandboxBackend('bwrap').available(machine)",
      "z.enum(['process', 'bwrap'])",
      "sandbox: 'process',",
      "const BACKENDS = ['process', 'bwrap'] as const;",
    ]) {
      expect(nameBranches(fine), fine).toEqual([]);
    }
  });

  it('finds none, except CLI option parsing', () => {
    const unexpected = hits
      .filter((h) => !(h.file in ALLOWED))
      .map((h) => `${h.file}: ${h.lines.map((l) => l.trim()).join(' | ')}`);
    expect(unexpected).toEqual([]);
    for (const [file, snippet] of Object.entries(ALLOWED)) {
      const lines = hits.find((h) => h.file === file)?.lines ?? [];
      // Only the named comparison, nothing else in that file.
      expect(
        lines.every((l) => l.includes(snippet)),
        `${file}: ${lines.join(' | ')}`,
      ).toBe(true);
    }
  });
});
