import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HostError } from '../../../host/errors.js';
import { discoverRunners } from '../../../host/plugins/catalog.js';
import { loadManifest, MANIFEST_MAX_BYTES } from '../../../host/plugins/resolveRunner.js';

const base = {
  id: 'hostile',
  name: 'H',
  version: '1.0.0',
  protocolVersion: 1,
  entry: { command: 'python3', args: ['{runnerDir}/r.py'] },
};

/** A folder of runner folders: `plant` makes each one's runner.json. */
function runnerDirs(plant: Record<string, (file: string) => void>): string {
  const root = mkdtempSync(join(tmpdir(), 'paddock-hostile-'));
  for (const [name, make] of Object.entries(plant)) {
    mkdirSync(join(root, name));
    make(join(root, name, 'runner.json'));
  }
  return root;
}
const manifest = (value: unknown) => (file: string) => writeFileSync(file, JSON.stringify(value));

function refusal(dir: string): HostError {
  try {
    loadManifest(dir);
  } catch (error) {
    if (error instanceof HostError) return error;
    throw error;
  }
  throw new Error('expected MANIFEST_INVALID');
}

describe('hostile runner.json: refused naming the file, the host carries on', () => {
  it.each([
    ['a FIFO (nobody writes)', (f: string) => execFileSync('mkfifo', [f]), /is not a regular file \(a FIFO\)/],
    ['a link to /dev/zero', (f: string) => symlinkSync('/dev/zero', f), /is a symbolic link/],
    [
      'a link to a valid manifest elsewhere',
      (f: string) => {
        const other = join(mkdtempSync(join(tmpdir(), 'paddock-elsewhere-')), 'runner.json');
        writeFileSync(other, JSON.stringify(base));
        symlinkSync(other, f);
      },
      /is a symbolic link/,
    ],
    ['a folder', (f: string) => mkdirSync(f), /is not a regular file \(a folder\)/],
    [
      `valid JSON of ${MANIFEST_MAX_BYTES + 1} bytes`,
      (f: string) => {
        const text = JSON.stringify(base);
        writeFileSync(f, text + ' '.repeat(MANIFEST_MAX_BYTES + 1 - text.length));
      },
      new RegExp(`is ${MANIFEST_MAX_BYTES + 1} bytes, more than the limit of ${MANIFEST_MAX_BYTES}`),
    ],
  ])('%s', (_name, make, why) => {
    const root = runnerDirs({ hostile: make });
    const error = refusal(join(root, 'hostile'));
    expect(error.code).toBe('MANIFEST_INVALID');
    expect(error.message).toMatch(why);
    expect(error.message.startsWith(join(root, 'hostile', 'runner.json'))).toBe(true);
  });

  it('a manifest of exactly the cap loads', () => {
    const text = JSON.stringify(base);
    const root = runnerDirs({ ok: (f) => writeFileSync(f, text + ' '.repeat(MANIFEST_MAX_BYTES - text.length)) });
    expect(loadManifest(join(root, 'ok')).manifest.id).toBe('hostile');
  });

  it('a FIFO, a /dev/zero link and an oversized manifest are listed as broken; the other runners still load', () => {
    const root = runnerDirs({
      fifo: (f) => execFileSync('mkfifo', [f]),
      zero: (f) => symlinkSync('/dev/zero', f),
      huge: (f) => writeFileSync(f, '['.repeat(MANIFEST_MAX_BYTES + 10)),
      fine: manifest({ ...base, id: 'fine' }),
    });
    const catalog = discoverRunners([root]);
    expect([...catalog.runners.keys()]).toEqual(expect.arrayContaining(['echo', 'fine']));
    expect(catalog.problems.map((p) => p.file).sort()).toEqual(
      ['fifo', 'huge', 'zero'].map((n) => join(root, n, 'runner.json')),
    );
  });

  it.each([
    ['entry.command', { command: 'python3\0-c', args: [] }],
    ['entry.args.1', { command: 'python3', args: ['{runnerDir}/r.py', 'a\0b'] }],
    ['entry.args.0', { command: 'python3', args: ['\0'] }],
    ['entry.node', { node: 'index.js\0.ts' }],
  ])('a NUL byte in %s is refused naming the field (the OS cannot take it)', (field, entry) => {
    const root = runnerDirs({ nul: manifest({ ...base, entry }) });
    const error = refusal(join(root, 'nul'));
    expect(error.data.fields).toContain(field);
    expect(error.message).toContain(`field ${field}: a NUL byte is not allowed`);
  });
});
