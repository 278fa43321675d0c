// How far an npm install is (issue 18 item 6): the packages its lock puts on this machine, how many of them are on
// disk, and the bytes unpacked so far.
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  bytesUnder,
  installedCount,
  packagesToInstall,
  thisMachine,
  watchInstall,
  type InstallProgress,
  type Machine,
} from '../../../host/packages/npmInstallProgress.js';
import { emptyFolder } from '../../helpers/packageTree.js';

afterEach(() => void vi.useRealTimers());

/** The shape of the harness lock (.harness/package-lock.json): a native CLI as one optional package per platform. */
const LOCK = {
  lockfileVersion: 3,
  packages: {
    '': { name: 'paddock-harnesses', dependencies: { '@openai/codex': '0.171.0' } },
    'node_modules/@openai/codex': { version: '0.171.0', optionalDependencies: {} },
    'node_modules/@openai/codex-linux-x64': { version: '0.171.0', optional: true, os: ['linux'], cpu: ['x64'] },
    'node_modules/@openai/codex-linux-arm64': { version: '0.171.0', optional: true, os: ['linux'], cpu: ['arm64'] },
    'node_modules/@openai/codex-darwin-arm64': { version: '0.171.0', optional: true, os: ['darwin'], cpu: ['arm64'] },
    'node_modules/@anthropic-ai/sdk-linux-x64': { version: '1.0.0', os: ['linux'], cpu: ['x64'], libc: ['glibc'] },
    'node_modules/@anthropic-ai/sdk-linux-x64-musl': { version: '1.0.0', os: ['linux'], cpu: ['x64'], libc: ['musl'] },
    'node_modules/not-windows': { version: '2.0.0', os: ['!win32'] },
    'node_modules/zod': { version: '4.6.7' },
    'node_modules/a/node_modules/zod': { version: '3.25.76' },
    'node_modules/linked': { resolved: '../linked', link: true },
    'node_modules/a/node_modules/bundled': { version: '1.0.0', inBundle: true },
    'node_modules/vitest': { version: '4.1.12', dev: true },
  },
};

const paths = (machine: Machine, omitDev = false) => packagesToInstall(LOCK, machine, omitDev).map((p) => p.path);

describe('packagesToInstall', () => {
  it('keeps what this platform gets: no root, link, bundled package, nor a native package of another platform', () => {
    expect(paths({ os: 'linux', cpu: 'x64', libc: 'glibc' })).toEqual([
      'node_modules/@openai/codex',
      'node_modules/@openai/codex-linux-x64',
      'node_modules/@anthropic-ai/sdk-linux-x64',
      'node_modules/not-windows',
      'node_modules/zod',
      'node_modules/a/node_modules/zod',
      'node_modules/vitest',
    ]);
    expect(paths({ os: 'linux', cpu: 'x64', libc: 'musl' })).toContain('node_modules/@anthropic-ai/sdk-linux-x64-musl');
    expect(paths({ os: 'darwin', cpu: 'arm64', libc: null })).toEqual([
      'node_modules/@openai/codex',
      'node_modules/@openai/codex-darwin-arm64',
      'node_modules/not-windows',
      'node_modules/zod',
      'node_modules/a/node_modules/zod',
      'node_modules/vitest',
    ]);
    expect(paths({ os: 'win32', cpu: 'x64', libc: null }, true)).toEqual([
      'node_modules/@openai/codex',
      'node_modules/zod',
      'node_modules/a/node_modules/zod',
    ]);
  });

  it('takes anything without packages as nothing to install', () => {
    expect([null, {}, { packages: {} }, 'lock'].map((lock) => packagesToInstall(lock))).toEqual([[], [], [], []]);
  });

  it("knows this machine's platform, cpu and libc", () => {
    const machine = thisMachine();
    expect(machine).toMatchObject({ os: process.platform, cpu: process.arch });
    if (process.platform === 'linux') expect(['glibc', 'musl']).toContain(machine.libc);
  });
});

describe('what is on disk', () => {
  /** A prefix holding zod at its locked version, a at another one, and b not yet. */
  function prefix(): string {
    const dir = emptyFolder();
    for (const [name, version, bytes] of [
      ['zod', '4.6.7', 1000],
      ['a', '0.9.0', 24],
    ] as const) {
      mkdirSync(join(dir, 'node_modules', name), { recursive: true });
      writeFileSync(join(dir, 'node_modules', name, 'package.json'), JSON.stringify({ name, version }));
      writeFileSync(join(dir, 'node_modules', name, 'index.js'), 'x'.repeat(bytes));
    }
    return dir;
  }
  const packages = [
    { path: 'node_modules/zod', version: '4.6.7' },
    { path: 'node_modules/a', version: '1.0.0' },
    { path: 'node_modules/b', version: '1.0.0' },
  ];

  it('counts a package once its package.json is there at its locked version', () => {
    const dir = prefix();
    expect(installedCount(dir, packages)).toBe(1);
    writeFileSync(join(dir, 'node_modules', 'a', 'package.json'), '{"name": "a", "vers'); // half written
    expect(installedCount(dir, packages)).toBe(1);
    writeFileSync(join(dir, 'node_modules', 'a', 'package.json'), '{"name": "a", "version": "1.0.0"}');
    expect(installedCount(dir, packages)).toBe(2);
  });

  it('adds up the bytes of the files below a folder, links not followed, a missing folder being 0', () => {
    const dir = emptyFolder();
    mkdirSync(join(dir, 'deep', 'er'), { recursive: true });
    writeFileSync(join(dir, 'a'), 'x'.repeat(1000));
    writeFileSync(join(dir, 'deep', 'er', 'b'), 'y'.repeat(24));
    symlinkSync('/usr', join(dir, 'deep', 'usr'));
    symlinkSync('../a', join(dir, 'deep', 'a'));
    expect(bytesUnder(dir)).toBe(1024);
    expect(bytesUnder(join(dir, 'nothing'))).toBe(0);
  });

  it('watchInstall counts the bytes again only after a pause 19 times as long as the last count took (5 %)', () => {
    vi.useFakeTimers();
    const dir = prefix();
    let clock = 0;
    const now = () => clock++; // every read moves the clock 1 ms: a count of bytes (read before and after) takes 1 ms
    const heard: number[] = [];
    const stop = watchInstall(dir, packages, (p) => heard.push(p.bytes), { everyMs: 1, now });
    vi.advanceTimersByTime(1); // the first report counts at clock 0, taking 1 ms: the next count is due at 20
    const first = heard[0]!;
    writeFileSync(join(dir, 'node_modules', 'zod', 'more.js'), 'x'.repeat(500));
    vi.advanceTimersByTime(14); // clock 2 to 15: not yet
    expect(heard).toEqual(Array(15).fill(first));
    vi.advanceTimersByTime(10); // clock 16 to 25: counted again at 20
    expect(heard.at(-1)).toBe(first + 500);
    expect(stop().bytes).toBe(first + 500);
  });

  it('watchInstall reports every period and once more when stopped', () => {
    vi.useFakeTimers();
    const dir = prefix();
    const heard: InstallProgress[] = [];
    const stop = watchInstall(dir, packages, (p) => heard.push(p), { everyMs: 2000 });
    vi.advanceTimersByTime(1999);
    expect(heard).toEqual([]);
    vi.advanceTimersByTime(1);
    mkdirSync(join(dir, 'node_modules', 'b'));
    writeFileSync(join(dir, 'node_modules', 'b', 'package.json'), '{"version": "1.0.0"}');
    const last = stop();
    vi.advanceTimersByTime(10_000); // stopped: nothing more
    expect(heard.map((p) => [p.done, p.total])).toEqual([
      [1, 3],
      [2, 3],
    ]);
    expect(last).toEqual(heard[1]);
    expect(last.bytes).toBeGreaterThan(heard[0]!.bytes);
  });
});
