// runner.json's `configSchema` and `version` come from the runner's code: the zod config schema
// and `manifest.version` of the definition its runner.ts exports. Used by
// scripts/genRunnerManifests.ts (npm run runners:gen) and the test that fails when they differ.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { RunnerDefinition } from '../sdk/runner/defineRunner.js';
import { configJsonSchema } from '../sdk/runner/configJsonSchema.js';

/** Folders of the runners whose manifests are generated: the built-in runners and the TypeScript examples. */
export function generatedRunnerDirs(repoRoot: string): string[] {
  return ['runners', 'examples']
    .flatMap((top) =>
      readdirSync(join(repoRoot, top), { withFileTypes: true })
        .filter((d) => d.isDirectory())
        .map((d) => join(repoRoot, top, d.name)),
    )
    .filter((dir) => existsSync(join(dir, 'runner.ts')) && existsSync(join(dir, 'runner.json')));
}

/** The runner definition `<dir>/runner.ts` exports (the one export with a manifest and a run function). */
export async function loadDefinition(dir: string): Promise<RunnerDefinition> {
  const module = (await import(pathToFileURL(join(dir, 'runner.ts')).href)) as Record<string, unknown>;
  const found = Object.values(module).filter(
    (v): v is RunnerDefinition =>
      typeof v === 'object' && v !== null && 'manifest' in v && typeof (v as RunnerDefinition).run === 'function',
  );
  if (found.length !== 1)
    throw new Error(`${dir}/runner.ts must export exactly one runner definition (found ${found.length})`);
  return found[0]!;
}

/** `runner.json` as the runner's code says it should be, and the fields that differ from the file. */
export async function expectedManifest(dir: string): Promise<{ text: string; stale: string[] }> {
  const current = JSON.parse(readFileSync(join(dir, 'runner.json'), 'utf8')) as Record<string, unknown>;
  const definition = await loadDefinition(dir);
  const wanted = { ...current, version: definition.manifest.version, configSchema: configJsonSchema(definition) };
  const stale = (['version', 'configSchema'] as const).filter(
    (k) => JSON.stringify(current[k]) !== JSON.stringify(wanted[k]),
  );
  if (current.id !== definition.manifest.name)
    stale.push(`id (runner.json "${String(current.id)}", code "${definition.manifest.name}")` as never);
  return { text: formatManifest(wanted), stale };
}

/** One JSON value on one line, `{ "a": 1 }` style (how the manifests are written by hand). */
function inline(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(inline).join(', ')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value);
    return entries.length === 0
      ? '{}'
      : `{ ${entries.map(([k, v]) => `${JSON.stringify(k)}: ${inline(v)}`).join(', ')} }`;
  }
  return JSON.stringify(value);
}

/** The manifest one field a line; `configSchema` and its `properties` one level further, one property a line. */
export function formatManifest(manifest: Record<string, unknown>): string {
  const block = (value: Record<string, unknown>, indent: string, expand: (key: string) => boolean): string =>
    `{\n${Object.entries(value)
      .map(
        ([k, v]) =>
          `${indent}  ${JSON.stringify(k)}: ` +
          (expand(k) && v && typeof v === 'object' && !Array.isArray(v)
            ? block(v as Record<string, unknown>, `${indent}  `, (kk) => kk === 'properties' && k === 'configSchema')
            : inline(v)),
      )
      .join(',\n')}\n${indent}}`;
  return `${block(manifest, '', (k) => k === 'configSchema')}\n`;
}
