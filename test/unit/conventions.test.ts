import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/fixtures.js';

/** Source folders whose code files must keep every line within {@link MAX_LINE}. */
const CODE_ROOTS = ['sdk', 'host', 'runners', 'examples', 'test', 'bench', 'scripts', 'bin'];
const CODE_FILE = /\.(ts|mts|cts|js|mjs|cjs|sh|py)$/;
/** Generated or installed trees: not written by hand, so not held to the limit. */
const SKIPPED_DIRS = new Set(['node_modules', 'dist', '.harness', '__pycache__', 'generated']);
const MAX_LINE = 120;

function codeFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (SKIPPED_DIRS.has(name)) return [];
    if (statSync(path).isDirectory()) return codeFiles(path);
    return CODE_FILE.test(name) ? [path] : [];
  });
}

/** Every `file:line (length)` longer than `max` characters in `text`. */
export function longLines(file: string, text: string, max = MAX_LINE): string[] {
  return text.split('\n').flatMap((line, i) => (line.length > max ? [`${file}:${i + 1} (${line.length})`] : []));
}

describe('repository conventions', () => {
  it(`no code file has a line over ${MAX_LINE} characters`, () => {
    const files = CODE_ROOTS.flatMap((root) => codeFiles(join(REPO_ROOT, root)));
    expect(files.length).toBeGreaterThan(200);
    const long = files.flatMap((file) => longLines(relative(REPO_ROOT, file), readFileSync(file, 'utf8')));
    expect(long).toEqual([]);
  });

  it('the line check finds a long line and counts characters, not bytes', () => {
    expect(longLines('a.ts', `ok\n${'x'.repeat(121)}\n${'é'.repeat(120)}`)).toEqual(['a.ts:2 (121)']);
  });

  it('runner fixture folders are kebab-case behaviour names equal to their manifest id', () => {
    const dir = join(REPO_ROOT, 'test/fixtures/runnerDirs');
    const bad = readdirSync(dir).flatMap((name) => {
      if (!/^[a-z0-9]+(-[a-z0-9]+)*$/.test(name)) return [`${name}: not kebab-case`];
      const manifest = JSON.parse(readFileSync(join(dir, name, 'runner.json'), 'utf8')) as { id?: unknown };
      // broken-manifest is a manifest the host must refuse; its id is part of what is broken.
      if (name !== 'broken-manifest' && manifest.id !== name) return [`${name}: manifest id ${String(manifest.id)}`];
      return [];
    });
    expect(bad).toEqual([]);
  });

  it('one-file runner fixtures are camelCase behaviour names', () => {
    const names = readdirSync(join(REPO_ROOT, 'test/fixtures/runners'));
    expect(names.filter((n) => !/^[a-z][A-Za-z0-9]*\.(ts|mjs)$/.test(n))).toEqual([]);
  });
});
