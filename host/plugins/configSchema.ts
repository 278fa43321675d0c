import { createRequire } from 'node:module';
import type { Ajv2020 as Ajv, ErrorObject, ValidateFunction } from 'ajv/dist/2020.js';
import { clip } from '../util/clip.js';
import { didYouMean } from '../util/didYouMean.js';
import { validate as validateJsonSchema2020 } from './generated/jsonSchema2020Meta.js';
import { cachedValidator, keepValidator, validatorKey } from './validatorCache.js';

const require = createRequire(import.meta.url);

// allErrors: a config's every problem is reported at once; verbose: errors carry their parent
// schema, whose property names feed the did-you-mean of an unknown field. validateSchema: false, because
// checkSchema() below checks a schema against its meta-schema first (ajv would compile the 2020-12
// meta-schema in every process that compiles a schema: most of a dispatch's planning time). code.source: the
// compiled validator can be written out as standalone code (validatorCache.ts).
const AJV_OPTIONS = {
  strict: false,
  allErrors: true,
  verbose: true,
  validateFormats: false,
  useDefaults: true,
  validateSchema: false,
  code: { source: true },
} as const;
const OPTIONS_TEXT = JSON.stringify(AJV_OPTIONS);

let ajvInstance: Ajv | undefined;
/**
 * ajv, loaded and set up on first use (a runtime require, not an import: a schema compiled on this machine before
 * is validated by its kept standalone code, and the process never loads ajv).
 */
function ajv(): Ajv {
  if (!ajvInstance) {
    const { Ajv2020 } = require('ajv/dist/2020.js') as typeof import('ajv/dist/2020.js');
    ajvInstance = new Ajv2020(AJV_OPTIONS);
  }
  return ajvInstance;
}

const META_2020_12 = 'https://json-schema.org/draft/2020-12/schema';
const validateMeta2020 = validateJsonSchema2020 as unknown as ValidateFunction;

/**
 * Throws, as ajv's own check does ("schema is invalid: …"), unless `schema` is valid against its meta-schema: the
 * ahead-of-time compiled 2020-12 validator (host/plugins/generated/) for the default dialect, ajv's for any other
 * `$schema` (an unknown one is refused).
 */
function checkSchema(schema: Record<string, unknown>): void {
  if (schema.$schema !== undefined && schema.$schema !== META_2020_12) {
    // Throws "schema is invalid: …" (or "no schema with key or ref" for an unknown dialect); never async here.
    if (ajv().validateSchema(schema, true) !== true)
      throw new Error(`schema is invalid: ${ajv().errorsText(ajv().errors)}`);
    return;
  }
  if (!validateMeta2020(schema)) throw new Error(`schema is invalid: ${ajv().errorsText(validateMeta2020.errors)}`);
}
/** Compiled validators by schema text: manifests are re-read per event, compiling is the slow part. */
const compiled = new Map<string, ValidateFunction>();

/** `a.b[0]` from a JSON pointer like `/a/b/0` (keys clipped: they are the config's, untrusted). */
function fieldOf(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce((acc, part) => (/^\d+$/.test(part) ? `${acc}[${part}]` : acc ? `${acc}.${clip(part)}` : clip(part)), '');
}

/** One problem of a runner config: the field path (relative to the config) and what is wrong. */
export interface RunnerConfigProblem {
  field: string;
  message: string;
}

function describe(error: ErrorObject): RunnerConfigProblem {
  let field = fieldOf(error.instancePath);
  // "must have required property 'x'" names the parent; point at the missing field itself.
  if (error.keyword === 'required')
    field = field
      ? `${field}.${clip(String(error.params.missingProperty))}`
      : clip(String(error.params.missingProperty));
  if (error.keyword === 'additionalProperties') {
    const extra = String(error.params.additionalProperty);
    const properties = (error.parentSchema as { properties?: Record<string, unknown> } | undefined)?.properties ?? {};
    const guess = didYouMean(extra, Object.keys(properties));
    const message = `is not allowed by the runner's config schema${guess ? `; did you mean "${guess}"?` : ''}`;
    return { field: field ? `${field}.${clip(extra)}` : clip(extra), message };
  }
  return { field, message: error.message ?? 'is invalid' };
}

/** Throws if `schema` is not a usable JSON Schema (the message says why). */
export function compileConfigSchema(schema: Record<string, unknown>): ValidateFunction {
  const text = JSON.stringify(schema);
  const known = compiled.get(text);
  if (known) return known;
  // A kept validator exists only for a schema that passed checkSchema and compiled, with these options and this ajv.
  const key = validatorKey(text, OPTIONS_TEXT);
  let validate = cachedValidator(key);
  if (!validate) {
    checkSchema(schema);
    validate = ajv().compile(schema);
    const code = standaloneCode(validate);
    if (code) keepValidator(key, code);
  }
  compiled.set(text, validate);
  return validate;
}

/** ajv's standalone (CommonJS) code of a compiled validator; empty when ajv cannot write it (nothing is kept). */
function standaloneCode(validate: ValidateFunction): string {
  try {
    const standalone = (require('ajv/dist/standalone/index.js') as typeof import('ajv/dist/standalone/index.js'))
      .default;
    return standalone(ajv(), validate);
  } catch {
    return '';
  }
}

/**
 * Check a binding's runner config against the runner's config schema. Returns a copy with the
 * schema's defaults filled in, or every problem with its field path (relative to the config);
 * `field` and `message` repeat the first.
 */
export function validateRunnerConfig(
  schema: Record<string, unknown>,
  config: Record<string, unknown>,
):
  | { ok: true; config: Record<string, unknown> }
  | { ok: false; field: string; message: string; problems: RunnerConfigProblem[] } {
  const validate = compileConfigSchema(schema);
  const copy = structuredClone(config);
  if (validate(copy)) return { ok: true, config: copy };
  const seen = new Set<string>();
  const problems = validate
    .errors!.map(describe)
    .filter((p) => !seen.has(`${p.field}\0${p.message}`) && seen.add(`${p.field}\0${p.message}`));
  return { ok: false, ...problems[0]!, problems };
}
