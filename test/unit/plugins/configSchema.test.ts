// A runner's config schema is untrusted: it is checked against the JSON Schema meta-schema before ajv compiles it.
// The 2020-12 meta-schema validator is compiled ahead of time (host/plugins/generated/); these tests hold it to the
// file its generator would write today and to ajv's own run-time verdict, valid and invalid schemas alike.
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { compileConfigSchema, validateRunnerConfig } from '../../../host/plugins/configSchema.js';
import { repoPath } from '../../helpers/fixtures.js';

/** The generator (a plain .mjs script, without types). */
const generator = (await import(repoPath('scripts/genMetaSchemaValidator.mjs'))) as {
  metaSchemaValidatorSource: () => string;
  OUT: string;
};

/** ajv with its own (run-time compiled) meta-schema check, as the host compiled schemas before. */
const reference = new Ajv2020({ strict: false, allErrors: true, verbose: true, validateFormats: false });

/** ajv's verdict: undefined when the schema compiles, else its message. */
function ajvVerdict(schema: Record<string, unknown>): string | undefined {
  try {
    reference.compile(schema);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

function hostVerdict(schema: Record<string, unknown>): string | undefined {
  try {
    compileConfigSchema(schema);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

const SCHEMAS: Record<string, unknown>[] = [
  { type: 'object', properties: { delayMs: { type: 'integer', minimum: 0 } }, additionalProperties: false },
  { type: 'object', required: ['a'], properties: { a: { type: 'string', pattern: '^x' } } },
  { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object' },
  { type: 'object', $defs: { n: { type: 'number' } }, properties: { n: { $ref: '#/$defs/n' } } },
  { anyOf: [{ type: 'string' }, { type: 'null' }], prefixItems: [{ type: 'string' }] },
  // invalid against the meta-schema
  { type: 'obj' },
  { type: 5 },
  { properties: [] },
  { required: 'a' },
  { minimum: 'zero' },
  { type: 'object', properties: { a: { type: ['string', 'strin'] } } },
  { items: { type: 'object', properties: { deep: { enum: 'not-an-array' } } } },
  { $defs: { a: { $defs: { b: { type: 'nope' } } } } },
  { additionalProperties: 'no' },
  { pattern: 7 },
  // another dialect: ajv's own check (an unknown meta-schema is refused)
  { $schema: 'http://example.invalid/unknown-dialect', type: 'object' },
];

describe('config schema check against the meta-schema', () => {
  it('the generated validator is what the generator writes from the installed ajv (npm run metaschema:gen)', () => {
    expect(readFileSync(generator.OUT, 'utf8')).toBe(generator.metaSchemaValidatorSource());
  });

  it("accepts and refuses exactly what ajv's run-time meta-schema check does, with ajv's message", () => {
    const verdicts = SCHEMAS.map((schema) => ({ schema, host: hostVerdict(schema), ajv: ajvVerdict(schema) }));
    for (const v of verdicts) expect(v.host, JSON.stringify(v.schema)).toBe(v.ajv);
    // The corpus has both kinds: the comparison can fail either way.
    expect(verdicts.filter((v) => v.ajv === undefined).length).toBeGreaterThanOrEqual(5);
    expect(verdicts.filter((v) => v.ajv !== undefined).length).toBeGreaterThanOrEqual(10);
  });

  it("every built-in runner's config schema passes, and validating a config still fills defaults", () => {
    for (const id of ['echo', 'claude-code', 'codex', 'acp', 'local-agent']) {
      const manifest = JSON.parse(readFileSync(repoPath(`runners/${id}/runner.json`), 'utf8')) as {
        configSchema: Record<string, unknown>;
      };
      expect(hostVerdict(manifest.configSchema), id).toBeUndefined();
    }
    const schema = { type: 'object', properties: { n: { type: 'integer', default: 3 } }, additionalProperties: false };
    expect(validateRunnerConfig(schema, {})).toEqual({ ok: true, config: { n: 3 } });
    expect(validateRunnerConfig(schema, { m: 1 })).toMatchObject({ ok: false, field: 'm' });
  });
});
