import { readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/fixtures.js';

const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies?: Record<string, string>;
};

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (name === 'node_modules') return [];
    return statSync(path).isDirectory() ? sources(path) : /\.(ts|mts|js|mjs)$/.test(name) ? [path] : [];
  });
}

/** The package a bare specifier names (`@scope/pkg/sub` → `@scope/pkg`, `ajv/dist/2020.js` → `ajv`). */
const packageOf = (spec: string) =>
  spec
    .split('/')
    .slice(0, spec.startsWith('@') ? 2 : 1)
    .join('/');

describe('what the host and the SDK import at run time is a runtime dependency', () => {
  const found = ['host', 'sdk', 'runners'].flatMap((top) =>
    sources(join(REPO_ROOT, top)).flatMap((file) => {
      const text = readFileSync(file, 'utf8');
      // Type-only imports vanish at run time; everything else must resolve in an install without devDependencies.
      const specs = [
        ...text.matchAll(
          /^\s*(?:import|export)\s(?!type\s)[^'"`;]*?from\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/gm,
        ),
      ].map((m) => (m[1] ?? m[2])!);
      return specs
        .filter(
          (s) =>
            !s.startsWith('.') && !s.startsWith('node:') && !builtinModules.includes(s) && !s.startsWith('paddock/'),
        )
        .map((s) => ({ file: relative(REPO_ROOT, file), pkg: packageOf(s) }));
    }),
  );

  it('sees the imports it checks', () => {
    expect(found.map((f) => f.pkg)).toEqual(expect.arrayContaining(['zod', 'ajv', 'better-sqlite3', 'pino']));
  });

  it('every bare import is in dependencies (ajv included), none only in devDependencies', () => {
    expect(found.filter((f) => !(f.pkg in pkg.dependencies)).map((f) => `${f.file} → ${f.pkg}`)).toEqual([]);
  });
});
