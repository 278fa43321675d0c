// A runner's config schema is untrusted: it is checked against the JSON Schema meta-schema before ajv compiles it.
// The 2020-12 meta-schema validator is compiled ahead of time (host/plugins/generated/); these tests hold it to the
// file its generator would write today and to ajv's own run-time verdict, valid and invalid schemas alike.
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import {
  LIST_ALL_PROBLEMS_MAX_BYTES,
  compileConfigSchema,
  validateRunnerConfig,
} from '../../../host/plugins/configSchema.js';
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

describe('a runner schema is untrusted (the fifth outside attack)', () => {
  it('a pattern matches in linear time: ^(a|a)*$ on 40 a’s and a ! answers at once (it held the loop 55 s)', () => {
    const schema = { type: 'object', properties: { p: { type: 'string', pattern: '^(a|a)*$' } } };
    const r = validateRunnerConfig(schema, { p: `${'a'.repeat(40)}!` });
    expect(r).toMatchObject({ ok: false, field: 'p', message: 'must match pattern "^(a|a)*$"' });
    expect(validateRunnerConfig(schema, { p: 'aaaa' })).toEqual({ ok: true, config: { p: 'aaaa' } });
    // patternProperties go through the same matcher.
    const keys = { type: 'object', patternProperties: { '^(x|x)*$': { type: 'integer' } } };
    expect(validateRunnerConfig(keys, { [`${'x'.repeat(40)}!`]: 'not checked', xx: 'no' })).toMatchObject({
      ok: false,
      field: 'xx',
    });
  });

  it('a pattern that cannot be matched in linear time, or means something else without `u`, is a broken schema', () => {
    for (const [pattern, why] of [
      ['^(a+)\\1$', /cannot be matched in linear time/],
      ['(?<=a)b', /cannot be matched in linear time/],
      ['^(?!x)', /cannot be matched in linear time/],
      ['^\\p{L}+$', /\\p\{…\}/],
      ['^\\u{1F600}$', /\\p\{…\}/],
      ['^😀$', /beyond U\+FFFF/],
      ['(', /is not a valid regular expression/],
    ] as const) {
      expect(hostVerdict({ type: 'string', pattern }), pattern).toMatch(why);
      expect(hostVerdict({ type: 'object', patternProperties: { [pattern]: {} } }), pattern).toMatch(why);
    }
    // A property merely named `pattern` is no pattern.
    expect(hostVerdict({ type: 'object', properties: { pattern: { type: 'string' } } })).toBeUndefined();
  });

  it('each schema stands alone: one runner cannot take another’s $id, nor reach into it with $ref', () => {
    const victim = { $id: 'https://x.example/shared', type: 'object', properties: { n: { type: 'integer' } } };
    const squatter = { $id: 'https://x.example/shared', type: 'object', properties: { m: { type: 'string' } } };
    expect(hostVerdict(squatter)).toBeUndefined();
    expect(hostVerdict(victim)).toBeUndefined();
    expect(validateRunnerConfig(victim, { n: 1 })).toEqual({ ok: true, config: { n: 1 } });
    // A $ref to another schema's id resolves nowhere: that schema is broken, not the one it names.
    const reacher = { type: 'object', properties: { p: { $ref: 'https://x.example/shared' } } };
    expect(hostVerdict(reacher)).toMatch(/schema is invalid: .*can't resolve reference/);
  });

  it('an $id cannot reach generated code: a comment-breaking $id is just an id', () => {
    const canary = `pwned-${process.pid}`;
    const schema = {
      $id: `https://x.example/p*/;globalThis[${JSON.stringify(canary)}]=1;/*`,
      type: 'object',
      properties: { a: { type: 'string' } },
    };
    expect(hostVerdict(schema)).toBeUndefined();
    expect(validateRunnerConfig(schema, { a: 'x' })).toEqual({ ok: true, config: { a: 'x' } });
    expect((globalThis as Record<string, unknown>)[canary]).toBeUndefined();
  });

  it('guesses for unknown keys are bounded: 2 000 properties and 300 unknown keys answer without a guess', () => {
    const properties = Object.fromEntries(
      Array.from({ length: 2000 }, (_, i) => [`p${String(i).padStart(30, '0')}`, {}]),
    );
    const schema = { type: 'object', properties, additionalProperties: false };
    const config = Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`q${String(i).padStart(30, '0')}`, 1]));
    const r = validateRunnerConfig(schema, config);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems).toHaveLength(300);
    expect(r.problems.every((p) => !p.message.includes('did you mean'))).toBe(true);
    // With a short list, the first fifty unknown keys of a validation get a guess, the rest none.
    const small = { type: 'object', properties: { delayMs: {} }, additionalProperties: false };
    const typos = [...'abcdefghijklmnopqrstuvwxy'].flatMap((c) => [`${c}elayMs`, `d${c}layMs`, `de${c}ayMs`]);
    const unknown = typos.filter((k) => k !== 'delayMs').slice(0, 60);
    const guessed = validateRunnerConfig(small, Object.fromEntries(unknown.map((k) => [k, 1])));
    expect(guessed.ok).toBe(false);
    if (guessed.ok) return;
    expect(guessed.problems).toHaveLength(60);
    expect(guessed.problems.filter((p) => p.message.endsWith('did you mean "delayMs"?'))).toHaveLength(50);
  });
});

describe('checking a config costs little whatever the config (the sixth outside attack)', () => {
  const echo = JSON.parse(readFileSync(repoPath('runners/echo/runner.json'), 'utf8')) as {
    configSchema: Record<string, unknown>;
  };

  it('a config over 16 KiB that fails reports its first problem only (90 000 unknown keys held the loop 2.8 s)', () => {
    const big = Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`k${i}`, 1]));
    expect(JSON.stringify(big).length).toBeGreaterThan(LIST_ALL_PROBLEMS_MAX_BYTES);
    const r = validateRunnerConfig(echo.configSchema, big);
    expect(r).toMatchObject({ ok: false, field: 'k0' });
    if (r.ok) return;
    expect(r.problems.map((p) => p.message)).toEqual([
      expect.stringContaining('is not allowed'),
      `(only the first problem is listed: the config is larger than ${LIST_ALL_PROBLEMS_MAX_BYTES} bytes)`,
    ]);
    // Under the size, every problem is listed, as before.
    const small = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, 1]));
    const listed = validateRunnerConfig(echo.configSchema, small);
    expect(listed.ok ? [] : listed.problems).toHaveLength(100);
    // A large config that is valid is checked in full, and its defaults filled.
    const prefix = 'p'.repeat(150);
    expect(validateRunnerConfig(echo.configSchema, { prefix })).toEqual({ ok: true, config: { prefix, delayMs: 0 } });
  });

  it('a schema that throws while checking fails the config, not the caller (toString keys, a $ref loop)', () => {
    const enumOfObjects = { type: 'object', properties: { t: { type: 'array', items: { enum: [{ a: 1 }] } } } };
    // ajv's deep equality calls a key named toString or valueOf: a TypeError inside the check, a failed config here.
    const r = validateRunnerConfig(enumOfObjects, { t: [{ toString: 1 }] });
    expect(r).toMatchObject({ ok: false, message: expect.stringMatching(/could not be checked .*\(TypeError\)/) });
    const unique = { type: 'object', properties: { tags: { type: 'array', uniqueItems: true } } };
    expect(validateRunnerConfig(unique, { tags: [{ valueOf: 1 }, { valueOf: 2 }] })).toMatchObject({ ok: false });
    const loop = {
      $defs: { l: { allOf: [{ $ref: '#/$defs/l' }] } },
      type: 'object',
      properties: { x: { $ref: '#/$defs/l' } },
    };
    expect(validateRunnerConfig(loop, { x: 1 })).toMatchObject({
      ok: false,
      message: expect.stringMatching(/could not be checked against the runner's config schema \(RangeError\)/),
    });
  });

  it('a verdict is remembered: the second check of the same config is the same, and a caller cannot change it', () => {
    const first = validateRunnerConfig(echo.configSchema, { delayMs: 5 });
    expect(first).toEqual({ ok: true, config: { delayMs: 5, prefix: '' } });
    if (first.ok) first.config.delayMs = 99;
    expect(validateRunnerConfig(echo.configSchema, { delayMs: 5 })).toEqual({
      ok: true,
      config: { delayMs: 5, prefix: '' },
    });
  });

  it('a repetition count above 16 is refused with the schema, saying to use minLength/maxLength', () => {
    expect(hostVerdict({ type: 'string', pattern: '^[a-z0-9-]{1,63}$' })).toMatch(
      /a repetition count above 16: use minLength\/maxLength/,
    );
    expect(hostVerdict({ type: 'string', pattern: '^[a-z0-9-]{1,16}$' })).toBeUndefined();
  });
});
