// A runner package's name, keywords and version against its manifest (docs/runner-packages.md §8). package.json is
// untrusted: every shape below is what a hostile or careless package could hold.
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HostError } from '../../../host/errors.js';
import {
  checkPackageIdentity,
  PACKAGE_JSON_MAX_BYTES,
  readPackageIdentity,
  requirePackageIdentity,
  type IdentityResult,
} from '../../../host/packages/packageIdentity.js';
import { RunnerManifestSchema } from '../../../host/plugins/manifest.js';
import { emptyFolder } from '../../helpers/packageTree.js';

const manifest = RunnerManifestSchema.parse({
  id: 'echo',
  name: 'Echo',
  version: '1.2.0',
  protocolVersion: 1,
  entry: { node: 'index.js' },
});
const good = { name: 'paddock-runner-echo', version: '1.2.0', keywords: ['chat', 'paddock-runner'] };

/** The fields the problems name, in order. */
const fields = (result: IdentityResult) => (result.ok ? [] : result.problems.map((p) => `${p.file} ${p.field}`));
const messages = (result: IdentityResult) => (result.ok ? [] : result.problems.map((p) => p.message));

describe('checkPackageIdentity', () => {
  it.each([
    ['the prefix name', good, 'paddock-runner-echo'],
    ['a scoped prefix name', { ...good, name: '@acme/paddock-runner-echo' }, '@acme/paddock-runner-echo'],
    [
      'another name with "paddock": { "runner" }',
      { ...good, name: 'echo-bot', paddock: { runner: 'echo' } },
      'echo-bot',
    ],
    ['the prefix name and the field', { ...good, paddock: { runner: 'echo' } }, 'paddock-runner-echo'],
  ])('accepts %s', (_what, pkg, packageName) => {
    expect(checkPackageIdentity(pkg, manifest)).toEqual({
      ok: true,
      identity: { id: 'echo', version: '1.2.0', packageName },
    });
  });

  it.each([
    ['null', null, 'must be a JSON object, not null'],
    ['an array', [good], 'must be a JSON object, not an array'],
    ['a string', 'paddock-runner-echo', 'must be a JSON object, not "paddock-runner-echo"'],
    ['a number', 7, 'must be a JSON object, not 7'],
  ])('refuses a package.json that is %s', (_what, pkg, message) => {
    const result = checkPackageIdentity(pkg, manifest);
    expect(fields(result)).toEqual(['package.json (root)']);
    expect(messages(result)).toEqual([message]);
  });

  it('names every problem at once: wrong types for every field', () => {
    const result = checkPackageIdentity({ name: 42, version: { major: 1 }, keywords: 'paddock-runner' }, manifest);
    expect(fields(result)).toEqual(['package.json name', 'package.json keywords', 'package.json version']);
    expect(messages(result)).toEqual([
      'must be a string, not 42',
      'must be an array holding "paddock-runner"',
      'must be a string, not {"major":1}',
    ]);
  });

  it('names every mismatch at once: another runner, no keyword, another version', () => {
    const result = checkPackageIdentity({ name: 'paddock-runner-other', version: '1.3.0', keywords: [] }, manifest);
    expect(fields(result)).toEqual(['package.json name', 'package.json keywords', 'package.json version']);
    expect(messages(result)[0]).toBe(
      '"paddock-runner-other" does not name runner "echo": call the package paddock-runner-echo (or ' +
        '@scope/paddock-runner-echo), or add "paddock": { "runner": "echo" }',
    );
    expect(messages(result).slice(1)).toEqual([
      'must include "paddock-runner"',
      '"1.3.0" differs from runner.json\'s version "1.2.0"',
    ]);
  });

  it.each([
    ['a name without the prefix and no field', { ...good, name: 'echo' }, 'package.json name'],
    [
      'the prefix name of another runner, the field naming this one',
      { ...good, name: 'paddock-runner-x', paddock: { runner: 'echo' } },
      'package.json name',
    ],
    ['a field naming another runner', { ...good, paddock: { runner: 'claude-code' } }, 'package.json paddock.runner'],
    ['a field that is not an object', { ...good, paddock: 'echo' }, 'package.json paddock'],
    ['a field without a runner', { ...good, paddock: {} }, 'package.json paddock.runner'],
    ['a runner that is not a string', { ...good, paddock: { runner: ['echo'] } }, 'package.json paddock.runner'],
    ['an uppercase name', { ...good, name: 'Paddock-Runner-Echo' }, 'package.json name'],
    ['a name with a path in it', { ...good, name: '../paddock-runner-echo' }, 'package.json name'],
    ['a name with a control character', { ...good, name: 'paddock-runner-echo\x1b[2J' }, 'package.json name'],
    ['a scope only', { ...good, name: '@acme/' }, 'package.json name'],
    ['a keyword in another case', { ...good, keywords: ['Paddock-Runner'] }, 'package.json keywords'],
    ['keywords as an object', { ...good, keywords: { 0: 'paddock-runner', length: 1 } }, 'package.json keywords'],
    ['a version as a number', { ...good, version: 1.2 }, 'package.json version'],
  ])('refuses %s', (_what, pkg, field) => {
    expect(fields(checkPackageIdentity(pkg, manifest))).toEqual([field]);
  });

  it('quotes a huge value clipped, never whole', () => {
    const name = `paddock-runner-${'e'.repeat(1_000_000)}`;
    const result = checkPackageIdentity({ ...good, name, version: 'v'.repeat(1_000_000) }, manifest);
    expect(fields(result)).toEqual(['package.json name', 'package.json version']);
    for (const message of messages(result)) {
      expect(message.length).toBeLessThan(400);
      expect(message).toMatch(/more characters\)/);
    }
  });

  it('reads own properties only: prototype keys are keys, never what an inherited field says', () => {
    // JSON.parse makes `__proto__` an own key (not the prototype): it must not stand for the fields it holds.
    const parsed: unknown = JSON.parse(
      '{"__proto__": {"name": "paddock-runner-echo", "version": "1.2.0", "keywords": ["paddock-runner"], ' +
        '"paddock": {"runner": "echo"}}, "constructor": {"name": "paddock-runner-echo"}}',
    );
    expect(fields(checkPackageIdentity(parsed, manifest))).toEqual([
      'package.json name',
      'package.json keywords',
      'package.json version',
    ]);
    // An object handed in with a real prototype: what it inherits is not its own either.
    const inherited = Object.create({ ...good, paddock: { runner: 'echo' } }) as object;
    expect(fields(checkPackageIdentity(inherited, manifest))).toEqual([
      'package.json name',
      'package.json keywords',
      'package.json version',
    ]);
    const field = JSON.parse('{"__proto__": {"runner": "echo"}}') as unknown;
    expect(fields(checkPackageIdentity({ ...good, name: 'echo-bot', paddock: field }, manifest))).toEqual([
      'package.json paddock.runner',
    ]);
    expect(({} as Record<string, unknown>).runner).toBeUndefined(); // nothing leaked into Object.prototype
  });
});

describe('readPackageIdentity (an unpacked package folder)', () => {
  const runnerJson = JSON.stringify({ ...manifest, entry: { node: 'index.js' } });
  const folder = (files: Record<string, string>) => {
    const dir = emptyFolder();
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    return dir;
  };

  it('answers the identity of a package whose two files agree', () => {
    const dir = folder({ 'package.json': JSON.stringify(good), 'runner.json': runnerJson });
    expect(readPackageIdentity(dir)).toEqual({
      ok: true,
      identity: { id: 'echo', version: '1.2.0', packageName: 'paddock-runner-echo' },
    });
    expect(requirePackageIdentity(dir)).toEqual({ id: 'echo', version: '1.2.0', packageName: 'paddock-runner-echo' });
  });

  it('names the problems of both files at once: no runner.json at the root, a package.json without its keyword', () => {
    const dir = folder({ 'package.json': JSON.stringify({ ...good, keywords: [] }) });
    mkdirSync(join(dir, 'lib'));
    writeFileSync(join(dir, 'lib', 'runner.json'), runnerJson); // not at the root: does not count
    expect(fields(readPackageIdentity(dir))).toEqual(['runner.json (root)', 'package.json keywords']);
  });

  it('names each invalid manifest field, and checks package.json as far as it can without the manifest', () => {
    const dir = folder({
      'package.json': JSON.stringify({ ...good, name: 'Bad Name' }),
      'runner.json': JSON.stringify({ id: 'Echo!', version: '1', protocolVersion: 1 }),
    });
    expect(fields(readPackageIdentity(dir))).toEqual(['runner.json id, name, entry', 'package.json name']);
  });

  it.each([
    ['not JSON', '{"name": "paddock-runner-echo",', /JSON/],
    ['too big', JSON.stringify({ ...good, description: 'x'.repeat(PACKAGE_JSON_MAX_BYTES) }), /more than the limit/],
  ])('refuses a package.json that is %s', (_what, text, message) => {
    const result = readPackageIdentity(folder({ 'package.json': text, 'runner.json': runnerJson }));
    expect(fields(result)).toEqual(['package.json (root)']);
    expect(messages(result)[0]).toMatch(message);
  });

  it('refuses a package.json or runner.json that is a link or a FIFO, without hanging', () => {
    const outside = folder({ 'package.json': JSON.stringify(good), 'runner.json': runnerJson });
    const dir = emptyFolder();
    symlinkSync(join(outside, 'package.json'), join(dir, 'package.json'));
    execFileSync('mkfifo', [join(dir, 'runner.json')]);
    const result = readPackageIdentity(dir);
    expect(fields(result)).toEqual(['package.json (root)', 'runner.json (root)']);
    expect(messages(result)[0]).toMatch(/symbolic link/);
  });

  it('requirePackageIdentity throws MANIFEST_INVALID listing every problem', () => {
    const dir = folder({
      'package.json': JSON.stringify({ ...good, version: '2.0.0', keywords: [] }),
      'runner.json': runnerJson,
    });
    let error: unknown;
    try {
      requirePackageIdentity(dir);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(HostError);
    expect((error as HostError).code).toBe('MANIFEST_INVALID');
    expect((error as HostError).message).toBe(
      `${dir}: not a runner package: package.json field keywords: must include "paddock-runner"; package.json field ` +
        `version: "2.0.0" differs from runner.json's version "1.2.0"`,
    );
    expect(((error as HostError).data.problems as unknown[]).length).toBe(2);
  });
});
