// A runner's config schema compiled once on a machine is kept as ajv standalone code (host/plugins/validatorCache.ts):
// a later process validates with it without loading ajv, with the same verdicts, defaults and did-you-means; a
// damaged or unwritable cache changes nothing but speed. Each case is a fresh Node process on the built host.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoPath } from '../../helpers/fixtures.js';

const SCHEMA = {
  type: 'object',
  properties: { delayMs: { type: 'integer', minimum: 0, default: 5 }, prefix: { type: 'string', maxLength: 3 } },
  additionalProperties: false,
};
const CONFIGS = [{}, { prefix: 'ab' }, { delaMs: 1 }, { prefix: 'abcdef', delayMs: -1 }];

/** In a new process: validate every config, and say whether ajv's compiler was loaded. */
function validateInChild(cacheDir: string): { results: unknown[]; ajvLoaded: boolean } {
  const script = `
    import { createRequire } from 'node:module';
    const { validateRunnerConfig } = await import(${JSON.stringify(repoPath('dist/host/plugins/configSchema.js'))});
    const results = ${JSON.stringify(CONFIGS)}.map((c) => validateRunnerConfig(${JSON.stringify(SCHEMA)}, c));
    const cache = createRequire(import.meta.url).cache;
    const ajvLoaded = Object.keys(cache).some((f) => f.includes('/ajv/dist/core.js'));
    process.stdout.write(JSON.stringify({ results, ajvLoaded }));`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    env: { ...process.env, PADDOCK_VALIDATOR_CACHE_DIR: cacheDir },
    encoding: 'utf8',
  });
  return JSON.parse(out) as { results: unknown[]; ajvLoaded: boolean };
}

describe('kept config validators', () => {
  it('the second process validates from the kept code, without ajv, exactly as the first compiled', () => {
    const dir = mkdtempSync(join(tmpdir(), 'paddock-validators-'));
    const first = validateInChild(dir);
    expect(first.ajvLoaded).toBe(true);
    expect(readdirSync(dir).filter((f) => f.endsWith('.cjs'))).toHaveLength(1);
    const second = validateInChild(dir);
    expect(second.ajvLoaded).toBe(false);
    expect(second.results).toEqual(first.results);
    // The verdicts themselves: defaults filled, a did-you-mean, every problem at once.
    expect(second.results[0]).toEqual({ ok: true, config: { delayMs: 5 } });
    expect(second.results[2]).toMatchObject({
      ok: false,
      field: 'delaMs',
      message: expect.stringContaining('delayMs'),
    });
    expect((second.results[3] as { problems: unknown[] }).problems).toHaveLength(2);
  });

  it('a damaged kept file is compiled again and replaced; an unwritable cache only costs time', () => {
    const dir = mkdtempSync(join(tmpdir(), 'paddock-validators-'));
    const reference = validateInChild(dir);
    const [file] = readdirSync(dir);
    writeFileSync(join(dir, file!), 'module.exports = 42; // not a validator');
    const repaired = validateInChild(dir);
    expect(repaired).toEqual({ ...reference, ajvLoaded: true });
    expect(validateInChild(dir).ajvLoaded).toBe(false); // rewritten

    // A cache folder that cannot be made (a file stands in its path; root ignores permission bits, not this).
    const blocked = mkdtempSync(join(tmpdir(), 'paddock-validators-blocked-'));
    writeFileSync(join(blocked, 'file'), '');
    expect(validateInChild(join(blocked, 'file', 'sub'))).toEqual(reference);
    expect(readdirSync(blocked)).toEqual(['file']);
  });
});
