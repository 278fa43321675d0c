import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compileConfigSchema } from '../../../host/plugins/configSchema.js';
import { expectedManifest, generatedRunnerDirs, loadDefinition } from '../../../scripts/runnerManifests.js';
import { REPO_ROOT, repoPath } from '../../helpers/fixtures.js';

const dirs = generatedRunnerDirs(REPO_ROOT);

describe("runner.json's configSchema and version come from the runner's code (npm run runners:gen)", () => {
  it('covers every built-in runner and the TypeScript example', () => {
    expect(dirs.map((d) => relative(REPO_ROOT, d)).sort()).toEqual(
      [
        'examples/hello-runner',
        'runners/acp',
        'runners/claude-code',
        'runners/codex',
        'runners/echo',
        'runners/local-agent',
      ].sort(),
    );
  });

  it.each(dirs.map((d) => [relative(REPO_ROOT, d), d]))(
    '%s/runner.json matches its zod config schema, version and name',
    async (_name, dir) => {
      expect((await expectedManifest(dir)).stale).toEqual([]);
    },
  );

  it(
    'the generated schema accepts what the zod schema accepts ' + 'and refuses what it refuses, defaults included',
    async () => {
      const echo = await loadDefinition(repoPath('runners/echo'));
      const validate = compileConfigSchema(
        (await import('../../../runners/echo/runner.json', { with: { type: 'json' } })).default.configSchema,
      );
      for (const config of [
        {},
        { delayMs: 5 },
        { prefix: 'x' },
        { delayMs: -1 },
        { delayMs: 1.5 },
        { colour: 'red' },
        { prefix: 'y'.repeat(201) },
      ]) {
        const copy = structuredClone(config) as Record<string, unknown>;
        const zod = echo.configSchema!.safeParse(config);
        expect(validate(copy), JSON.stringify(config)).toBe(zod.success);
        if (zod.success) expect(copy).toEqual(zod.data);
      }
    },
  );

  it('fails when runner.json and the code differ (a planted version and schema drift)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'paddock-manifest-'));
    const sdk = repoPath('sdk/index.ts');
    writeFileSync(
      join(dir, 'runner.ts'),
      `import { defineRunner, z } from ${JSON.stringify(sdk)};\nexport const r = defineRunner({ manifest: { ` +
        `name: 'drift', version: '2.0.0' }, configSchema: z.strictObject({ n: z.int().min(1).default(3) }), run: ` +
        `() => 'ok' });\n`,
    );
    const manifest = {
      id: 'drift',
      name: 'Drift',
      version: '1.0.0',
      protocolVersion: 1,
      entry: { node: 'index.ts' },
      configSchema: { type: 'object', properties: { n: { type: 'integer' } } },
    };
    writeFileSync(join(dir, 'runner.json'), JSON.stringify(manifest));
    const { stale, text } = await expectedManifest(dir);
    expect(stale).toEqual(['version', 'configSchema']);
    const fixed = JSON.parse(text) as typeof manifest;
    expect(fixed.version).toBe('2.0.0');
    expect(fixed.configSchema).toEqual({
      type: 'object',
      properties: { n: { default: 3, type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER } },
      additionalProperties: false,
    });
    // nothing else touched
    expect({ ...fixed, version: manifest.version, configSchema: manifest.configSchema }).toEqual(manifest);
    writeFileSync(join(dir, 'runner.json'), text);
    expect((await expectedManifest(dir)).stale).toEqual([]);
  });
});
