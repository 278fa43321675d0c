import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/fixtures.js';

/** Source folders whose code files must keep every line within {@link MAX_LINE}. */
const CODE_ROOTS = ['sdk', 'host', 'console', 'runners', 'examples', 'test', 'bench', 'scripts', 'bin'];
const CODE_FILE = /\.(ts|tsx|mts|cts|js|mjs|cjs|sh|py)$/;
/** Generated or installed trees: not written by hand, so not held to the limit. */
const SKIPPED_DIRS = new Set(['node_modules', 'dist', '.harness', '__pycache__', 'generated']);
const MAX_LINE = 120;
/**
 * Words that name a fixture by its role in a test, not by what it does to the host (test/README.md):
 * `attacker` says nothing a reader can check, `tries-sandbox-escapes` does.
 */
const ROLE_WORDS = new Set(['attacker', 'prober', 'user', 'helper', 'leaker', 'nester', 'streamer', 'dummy', 'mock']);

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

/** The role words in a fixture name (kebab-case or camelCase, extension ignored). */
export function roleWords(name: string): string[] {
  const words = name
    .replace(/\.[a-z]+$/, '')
    .split(/-|(?=[A-Z])/)
    .map((w) => w.toLowerCase());
  return words.filter((w) => ROLE_WORDS.has(w));
}

/** Every fixture name the convention covers: runner folders (tests and bench), one-file runners, other fixtures. */
function fixtureNames(): string[] {
  const list = (dir: string) => readdirSync(join(REPO_ROOT, dir)).map((name) => `${dir}/${name}`);
  return [...list('test/fixtures/runnerDirs'), ...list('test/fixtures/runners'), ...list('bench/runnerDirs')].concat(
    list('test/fixtures').filter((path) => !statSync(join(REPO_ROOT, path)).isDirectory()),
  );
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
    const bad = ['test/fixtures/runnerDirs', 'bench/runnerDirs'].flatMap((folder) => {
      const dir = join(REPO_ROOT, folder);
      return readdirSync(dir).map((name) => [dir, name] as const);
    });
    expect(bad.length).toBeGreaterThan(10);
    const problems = bad.flatMap(([dir, name]) => {
      if (!/^[a-z0-9]+(-[a-z0-9]+)*$/.test(name)) return [`${name}: not kebab-case`];
      const manifest = JSON.parse(readFileSync(join(dir, name, 'runner.json'), 'utf8')) as { id?: unknown };
      // broken-manifest is a manifest the host must refuse; its id is part of what is broken.
      if (name !== 'broken-manifest' && manifest.id !== name) return [`${name}: manifest id ${String(manifest.id)}`];
      return [];
    });
    expect(problems).toEqual([]);
  });

  it('no fixture is named by a role word (attacker, prober, user…) instead of its behaviour', () => {
    const names = fixtureNames();
    expect(names.length).toBeGreaterThan(30);
    const roleNamed = names.flatMap((path) => {
      const found = roleWords(path.slice(path.lastIndexOf('/') + 1));
      return found.length ? [`${path}: ${found.join(', ')}`] : [];
    });
    expect(roleNamed).toEqual([]);
  });

  it('the role-word check finds role words in kebab-case and camelCase names, not inside other words', () => {
    expect(roleWords('fs-attacker')).toEqual(['attacker']);
    expect(roleWords('gateway-user')).toEqual(['user']);
    expect(roleWords('streamProber.ts')).toEqual(['prober']);
    expect(roleWords('tries-sandbox-escapes')).toEqual([]);
    expect(roleWords('misusesHostRequests.ts')).toEqual([]);
  });

  it('one-file runner fixtures are camelCase behaviour names', () => {
    const names = readdirSync(join(REPO_ROOT, 'test/fixtures/runners'));
    expect(names.filter((n) => !/^[a-z][A-Za-z0-9]*\.(ts|mjs)$/.test(n))).toEqual([]);
  });
});
