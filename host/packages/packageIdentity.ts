import { join } from 'node:path';
import { HostError } from '../errors.js';
import type { RunnerManifestFile } from '../plugins/manifest.js';
import { loadManifest } from '../plugins/resolveRunner.js';
import { clip } from '../util/clip.js';
import { readBoundedFile } from '../util/readBoundedFile.js';

/** Who a runner package is: its manifest's id and version, and its npm name (docs/runner-packages.md §8). */
export interface PackageIdentity {
  /** The runner id (runner.json `id`), which bindings name. */
  id: string;
  /** The version (runner.json `version`, equal to package.json `version`). */
  version: string;
  /** The npm package name (package.json `name`), e.g. `paddock-runner-echo` or `@acme/paddock-runner-echo`. */
  packageName: string;
}

/** One broken convention, naming the file and field it is about. */
export interface IdentityProblem {
  file: 'package.json' | 'runner.json';
  /** A dotted field path (`name`, `keywords`, `paddock.runner`), or `(root)` for the file as a whole. */
  field: string;
  message: string;
}

/** The identity, or every problem found (never just the first). */
export type IdentityResult = { ok: true; identity: PackageIdentity } | { ok: false; problems: IdentityProblem[] };

/** The keyword every runner package carries, so `npm search keywords:paddock-runner` finds it. */
export const RUNNER_KEYWORD = 'paddock-runner';
/** The name prefix of a runner package: `paddock-runner-<id>`, or `@scope/paddock-runner-<id>`. */
export const RUNNER_NAME_PREFIX = 'paddock-runner-';
/** The largest package.json read (the package is untrusted; real ones are a few KB). */
export const PACKAGE_JSON_MAX_BYTES = 1024 * 1024;
/** npm's own limit on a package name's length. */
const NAME_MAX_CHARS = 214;
/** A package name npm accepts today: lowercase, URL-safe, optionally scoped (validate-npm-package-name's rules). */
const NPM_NAME = /^(?:@[a-z0-9-~][a-z0-9-._~]*\/)?[a-z0-9-~][a-z0-9-._~]*$/;

/** An untrusted value quoted in a message: JSON (visible escapes), at most a few hundred characters. */
const quote = (value: unknown) => clip(JSON.stringify(value) ?? String(value));

/** `obj[key]` only when it is the object's own property (never one inherited from a prototype). */
function own(obj: object, key: string): unknown {
  return Object.hasOwn(obj, key) ? (obj as Record<string, unknown>)[key] : undefined;
}

const isPlainObject = (value: unknown): value is object =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Check a runner package's `package.json` (parsed, untrusted: any JSON value) against its validated runner manifest
 * (docs/runner-packages.md §8): `keywords` holds `"paddock-runner"`; `name` is a valid npm name, and is
 * `paddock-runner-<id>` (or `@scope/paddock-runner-<id>`) unless `"paddock": { "runner": "<id>" }` names the
 * manifest's id (that field, when present, must name the id; a name of the `paddock-runner-` form must name it too);
 * `version` equals the manifest's. Answers the identity, or every problem at once. Reads own properties only, so a
 * prototype key (`__proto__`, `constructor`) in the file is just a key. Pure: the caller reads the files (see
 * {@link readPackageIdentity}).
 */
export function checkPackageIdentity(packageJson: unknown, manifest: RunnerManifestFile): IdentityResult {
  const problems = packageJsonProblems(packageJson, manifest);
  if (problems.length > 0) return { ok: false, problems };
  const packageName = own(packageJson as object, 'name') as string;
  return { ok: true, identity: { id: manifest.id, version: manifest.version, packageName } };
}

/** What is wrong with `packageJson`; without a manifest (it did not load), only what needs none is checked. */
function packageJsonProblems(packageJson: unknown, manifest: Pick<RunnerManifestFile, 'id' | 'version'> | null) {
  const problems: IdentityProblem[] = [];
  const problem = (field: string, message: string) => problems.push({ file: 'package.json', field, message });
  if (!isPlainObject(packageJson)) {
    problem('(root)', `must be a JSON object, not ${Array.isArray(packageJson) ? 'an array' : quote(packageJson)}`);
    return problems;
  }

  const name = own(packageJson, 'name');
  const validName = typeof name === 'string' && name.length <= NAME_MAX_CHARS && NPM_NAME.test(name);
  if (typeof name !== 'string') problem('name', `must be a string, not ${quote(name)}`);
  else if (!validName)
    problem('name', `${quote(name)} is not an npm package name (lowercase, URL-safe, at most ${NAME_MAX_CHARS})`);

  const paddock = own(packageJson, 'paddock');
  const runner = isPlainObject(paddock) ? own(paddock, 'runner') : undefined;
  if (paddock !== undefined && !isPlainObject(paddock)) problem('paddock', `must be an object, not ${quote(paddock)}`);
  else if (paddock !== undefined && typeof runner !== 'string')
    problem('paddock.runner', `must be a string, not ${quote(runner)}`);
  else if (manifest && typeof runner === 'string' && runner !== manifest.id)
    problem('paddock.runner', `names runner ${quote(runner)}, but runner.json's id is ${quote(manifest.id)}`);

  if (manifest && validName) {
    // The name names the runner by its prefix form; only a package whose `paddock.runner` names it may be called
    // otherwise, and never by the prefix form with another id (`paddock-runner-b` for runner a).
    const wanted = `${RUNNER_NAME_PREFIX}${manifest.id}`;
    const bare = name.replace(/^@[^/]+\//, '');
    if (bare !== wanted && (paddock === undefined || bare.startsWith(RUNNER_NAME_PREFIX)))
      problem(
        'name',
        `${quote(name)} does not name runner ${quote(manifest.id)}: call the package ${wanted} (or ` +
          `@scope/${wanted}), or add "paddock": { "runner": ${quote(manifest.id)} }`,
      );
  }

  const keywords = own(packageJson, 'keywords');
  if (!Array.isArray(keywords)) problem('keywords', `must be an array holding ${quote(RUNNER_KEYWORD)}`);
  else if (!keywords.includes(RUNNER_KEYWORD)) problem('keywords', `must include ${quote(RUNNER_KEYWORD)}`);

  const version = own(packageJson, 'version');
  if (typeof version !== 'string') problem('version', `must be a string, not ${quote(version)}`);
  else if (manifest && version !== manifest.version)
    problem('version', `${quote(version)} differs from runner.json's version ${quote(manifest.version)}`);
  return problems;
}

/**
 * Read and check the package in folder `dir` (an unpacked package's root): `runner.json` must be a regular file there
 * and validate (host/plugins/resolveRunner.ts `loadManifest`), `package.json` a regular JSON file of at most
 * {@link PACKAGE_JSON_MAX_BYTES}, and the two must agree ({@link checkPackageIdentity}). Every problem at once,
 * from both files.
 */
export function readPackageIdentity(dir: string): IdentityResult {
  const problems: IdentityProblem[] = [];
  let packageJson: unknown;
  let parsed = false;
  try {
    const bytes = readBoundedFile(join(dir, 'package.json'), { maxBytes: PACKAGE_JSON_MAX_BYTES });
    packageJson = JSON.parse(bytes.toString('utf8'));
    parsed = true;
  } catch (error) {
    problems.push({ file: 'package.json', field: '(root)', message: (error as Error).message });
  }
  let manifest: RunnerManifestFile | null = null;
  try {
    manifest = loadManifest(dir).manifest;
  } catch (error) {
    const data = (error as HostError).data ?? {};
    const fields = (data.fields as string[] | undefined) ?? [(data.field as string | undefined) ?? '(root)'];
    // loadManifest's message starts with the file's path; the problem names the file already.
    const message = (error as Error).message.replace(`${join(dir, 'runner.json')}: `, '');
    problems.push({ file: 'runner.json', field: fields.join(', '), message });
  }
  if (parsed) problems.push(...packageJsonProblems(packageJson, manifest));
  if (manifest && problems.length === 0) return checkPackageIdentity(packageJson, manifest);
  return { ok: false, problems };
}

/**
 * {@link readPackageIdentity}, throwing a MANIFEST_INVALID that lists every problem (`package.json field name: …;
 * runner.json field entry: …`) with `data.problems`, for a caller that refuses the package on any.
 */
export function requirePackageIdentity(dir: string): PackageIdentity {
  const result = readPackageIdentity(dir);
  if (result.ok) return result.identity;
  const listed = result.problems.map((p) => `${p.file} field ${p.field}: ${p.message}`).join('; ');
  throw new HostError('MANIFEST_INVALID', `${dir}: not a runner package: ${listed}`, {
    file: dir,
    field: result.problems[0]!.field,
    problems: result.problems,
  });
}
