import { createHash } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import { clip } from '../util/clip.js';
import { fieldPath } from '../util/fieldPath.js';
import { didYouMean, SuggestBudget } from '../util/didYouMean.js';
import { validate as validateJsonSchema2020 } from './generated/jsonSchema2020Meta.js';

// A runner's config schema is untrusted (runner packages are), and so is the config a tenant's admin checks against
// it. Two consequences, each found by an outside attack:
// - Every schema is compiled by its own ajv instance: in a shared one, a runner's `$id` could take the id another
//   runner's schema uses (that runner broke) or a `$ref` could reach into another runner's schema (its meaning then
//   depended on a package it does not ship).
// - Its `pattern`s run on tenant input: `^(a|a)*$` against 34 characters held the event loop 55 s. Patterns are
//   compiled for V8's linear-time regular expression engine (the `l` flag), and a pattern it cannot take is refused
//   with the schema (linearPattern).
setFlagsFromString('--enable-experimental-regexp-engine');

/**
 * A schema `pattern` as a RegExp that matches in time linear in its input, or an Error saying why it cannot be one.
 * JSON Schema patterns are ECMA-262 with the `u` flag: the pattern must be valid so. V8's linear engine does not take
 * `u`, so the pattern is compiled without it, and what means something else without `u` is refused: `\p{…}`, `\P{…}`,
 * `\u{…}` and characters beyond U+FFFF (without `u`, `.` and a class see UTF-16 units; for text in the Basic
 * Multilingual Plane that is the same). Backreferences and lookaround are refused by the engine itself.
 */
function linearPattern(pattern: string): RegExp {
  try {
    new RegExp(pattern, 'u'); // only checks the syntax
  } catch (error) {
    throw new Error(`pattern ${JSON.stringify(clip(pattern))} is not a valid regular expression: ${String(error)}`);
  }
  if (/\\[pP]\{|\\u\{/.test(pattern) || /[\u{10000}-\u{10FFFF}]/u.test(pattern))
    throw new Error(
      `pattern ${JSON.stringify(clip(pattern))} uses \\p{…}, \\u{…} or a character beyond U+FFFF, which the ` +
        'linear-time matcher cannot take',
    );
  // `l`: V8's linear-time engine, available once the flag above is set (eslint knows only the standard flags).
  const linear = 'l';
  try {
    return new RegExp(pattern, linear);
  } catch {
    // The engine also refuses a counted repetition above 16 (it expands them): say so when that is the only reason.
    const uncounted = pattern.replace(/\{\d+(,\d*)?\}/g, '{1,2}');
    const countsOnly = uncounted !== pattern && canCompile(uncounted, linear);
    throw new Error(
      `pattern ${JSON.stringify(clip(pattern))} cannot be matched in linear time (` +
        (countsOnly
          ? 'a repetition count above 16: use minLength/maxLength for lengths'
          : 'backreferences and lookaround are not allowed') +
        ' in a runner config schema)',
    );
  }
}

function canCompile(pattern: string, flags: string): boolean {
  try {
    new RegExp(pattern, flags); // only checks
    return true;
  } catch {
    return false;
  }
}

/** ajv's hook for building a pattern's RegExp: the linear-time one (the flags ajv asks for are the `u` it implies). */
const regExp = Object.assign((pattern: string) => linearPattern(pattern), { code: 'linearPattern' });

// allErrors: a config's every problem is reported at once; verbose: errors carry their parent
// schema, whose property names feed the did-you-mean of an unknown field. validateSchema: false, because
// checkSchema() below checks a schema against its meta-schema first (ajv would compile the 2020-12
// meta-schema in every process that compiles a schema: most of a dispatch's planning time).
const newAjv = (allErrors = true) =>
  new Ajv2020({
    strict: false,
    allErrors,
    verbose: true,
    validateFormats: false,
    useDefaults: true,
    validateSchema: false,
    code: { regExp },
  });

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
    const ajv = newAjv();
    if (ajv.validateSchema(schema, true) !== true) throw new Error(`schema is invalid: ${ajv.errorsText(ajv.errors)}`);
    return;
  }
  if (!validateMeta2020(schema)) throw new Error(`schema is invalid: ${newAjv().errorsText(validateMeta2020.errors)}`);
}

/** The path segments of a JSON pointer like `/a/b/0` (`['a', 'b', 0]`), for {@link fieldPath}. */
function segmentsOf(pointer: string): PropertyKey[] {
  return pointer
    .split('/')
    .slice(1)
    .map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'))
    .map((p) => (/^\d+$/.test(p) ? Number(p) : p));
}

/** One problem of a runner config: the field path (relative to the config) and what is wrong. */
export interface RunnerConfigProblem {
  field: string;
  message: string;
}

function describe(error: ErrorObject, budget: SuggestBudget): RunnerConfigProblem {
  const at = segmentsOf(error.instancePath);
  // "must have required property 'x'" names the parent; point at the missing field itself.
  if (error.keyword === 'required')
    return { field: fieldPath([...at, String(error.params.missingProperty)]), message: error.message ?? 'is invalid' };
  if (error.keyword === 'additionalProperties') {
    const extra = String(error.params.additionalProperty);
    const properties = (error.parentSchema as { properties?: Record<string, unknown> } | undefined)?.properties ?? {};
    const guess = didYouMean(extra, Object.keys(properties), budget);
    const message = `is not allowed by the runner's config schema${guess ? `; did you mean "${guess}"?` : ''}`;
    return { field: fieldPath([...at, extra]), message };
  }
  return { field: fieldPath(at), message: error.message ?? 'is invalid' };
}

/**
 * A schema's validators: `first` stops at the first problem (cheap on any input, and all a valid config needs);
 * `all()` lists every problem, compiled the first time a small config fails (not on a dispatch's path).
 */
interface Validators {
  text: string;
  first: ValidateFunction;
  all: () => ValidateFunction;
}
/** Compiled validators by schema text: manifests are re-read per event, compiling is the slow part. */
const compiled = new Map<string, Validators>();

/** Throws if `schema` is not a usable JSON Schema (the message says why). */
export function compileConfigSchema(schema: Record<string, unknown>): ValidateFunction {
  return validatorsOf(schema).first;
}

/** Throws what a schema that does not compile is invalid for. */
function compile(schema: Record<string, unknown>, allErrors: boolean): ValidateFunction {
  try {
    return newAjv(allErrors).compile(schema);
  } catch (error) {
    // A pattern refused above, a $ref that resolves nowhere (each schema stands alone): the schema is invalid.
    throw new Error(`schema is invalid: ${error instanceof Error ? error.message : String(error)}`);
  }
}

function validatorsOf(schema: Record<string, unknown>): Validators {
  const text = JSON.stringify(schema);
  const cached = compiled.get(text);
  if (cached) return cached;
  checkSchema(schema);
  let all: ValidateFunction | undefined;
  // The same schema compiled with allErrors: it compiles when `first` did.
  const validators = { text, first: compile(schema, false), all: () => (all ??= compile(schema, true)) };
  compiled.set(text, validators);
  return validators;
}

/**
 * Up to this size (as JSON) a config that fails is checked again to list every problem. A larger one reports its
 * first problem only: listing every error of a hostile config (90 000 unknown keys, 400 000 wrong items) held the
 * event loop for seconds, while stopping at the first error costs next to nothing.
 */
export const LIST_ALL_PROBLEMS_MAX_BYTES = 16 * 1024;

/** What checking one config gave (see {@link validateRunnerConfig}). */
export type RunnerConfigVerdict =
  | { ok: true; config: Record<string, unknown> }
  | { ok: false; field: string; message: string; problems: RunnerConfigProblem[] };

/**
 * Verdicts already reached, by a digest of the schema and the config: a stored binding is checked again by every
 * apply of its tenant, every enable or disable and every dispatch, and a large valid config costs each time. Kept
 * oldest-out within a count and a size (each verdict holds a copy of its config).
 */
const verdicts = new Map<string, { verdict: RunnerConfigVerdict; bytes: number }>();
const VERDICTS_KEPT = 1024;
const VERDICT_BYTES_KEPT = 32 * 1024 * 1024;
let verdictBytes = 0;

/**
 * Check a binding's runner config against the runner's config schema. Returns a copy with the
 * schema's defaults filled in, or the problems with their field paths (relative to the config;
 * every one up to {@link LIST_ALL_PROBLEMS_MAX_BYTES}, the first beyond); `field` and `message`
 * repeat the first. A schema that throws while checking (a config key named `toString` in an
 * `enum` comparison, a `$ref` loop that consumes nothing) makes the config fail, never the caller.
 */
export function validateRunnerConfig(
  schema: Record<string, unknown>,
  config: Record<string, unknown>,
  budget = new SuggestBudget(),
): RunnerConfigVerdict {
  const validators = validatorsOf(schema);
  const configText = JSON.stringify(config);
  const key = createHash('sha256').update(validators.text).update('\0').update(configText).digest('hex');
  const known = verdicts.get(key);
  if (known) return structuredClone(known.verdict);
  const verdict = check(validators, config, configText.length, budget);
  remember(key, verdict, configText.length);
  return verdict;
}

function remember(key: string, verdict: RunnerConfigVerdict, bytes: number): void {
  if (bytes > VERDICT_BYTES_KEPT) return;
  verdicts.set(key, { verdict: structuredClone(verdict), bytes });
  verdictBytes += bytes;
  for (const [oldest, kept] of verdicts) {
    if (verdicts.size <= VERDICTS_KEPT && verdictBytes <= VERDICT_BYTES_KEPT) break;
    verdicts.delete(oldest);
    verdictBytes -= kept.bytes;
  }
}

function check(
  { first, all }: Validators,
  config: Record<string, unknown>,
  size: number,
  budget: SuggestBudget,
): RunnerConfigVerdict {
  const copy = structuredClone(config);
  try {
    if (first(copy)) return { ok: true, config: copy };
    const listing = size <= LIST_ALL_PROBLEMS_MAX_BYTES ? all() : undefined;
    const errors = listing && !listing(structuredClone(config)) ? listing.errors! : first.errors!;
    const seen = new Set<string>();
    const problems = errors
      .map((error) => describe(error, budget))
      .filter((p) => !seen.has(`${p.field}\0${p.message}`) && seen.add(`${p.field}\0${p.message}`));
    if (errors === first.errors && size > LIST_ALL_PROBLEMS_MAX_BYTES)
      problems.push({
        field: '',
        message: `(only the first problem is listed: the config is larger than ${LIST_ALL_PROBLEMS_MAX_BYTES} bytes)`,
      });
    return { ok: false, ...problems[0]!, problems };
  } catch (error) {
    const message = `could not be checked against the runner's config schema (${
      error instanceof Error ? error.name : 'error'
    })`;
    return { ok: false, field: '', message, problems: [{ field: '', message }] };
  }
}
