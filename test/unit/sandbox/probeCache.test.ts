// The machine probe kept between host processes of one boot (host/sandbox/probeCache.ts): what is kept, what is
// never trusted, and that a host process really uses it instead of running the helpers. The tests keep their probes
// in their own folder (PADDOCK_PROBE_CACHE_DIR), never in the machine's /run/paddock.
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { forgetMachineProbe, probeMachine } from '../../../host/sandbox/probe.js';
import {
  PROBE_CACHE_TTL_MS,
  probeCacheDir,
  probeCacheKey,
  readProbeCache,
  writeProbeCache,
  type CachedProbe,
} from '../../../host/sandbox/probeCache.js';
import { resolveRunIdentity } from '../../../host/sandbox/runIdentity.js';
import { repoPath } from '../../helpers/fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'paddock-probe-cache-'));
process.env.PADDOCK_PROBE_CACHE_DIR = dir;
/** The file a probe kept under `key` is in. */
const fileFor = (key: string) => join(dir, `machine-probe-${key.slice(0, 32)}.json`);
const KEY_A = 'a'.repeat(64);
const KEY_B = 'b'.repeat(64);

/** A probe where everything worked, with a version no real bwrap prints (so a reader of it is recognised). */
const sample = (version = 'bubblewrap canary-from-the-kept-probe'): CachedProbe => ({
  bwrap: { available: true, path: '/usr/bin/bwrap', version },
  diskQuota: {
    available: true,
    mechanism: 'ext4 image on a loop device',
    tools: { mkfs: '/usr/sbin/mkfs.ext4', mount: '/usr/bin/mount', umount: '/usr/bin/umount' },
  },
});

describe('the kept machine probe (probeCache.ts)', () => {
  it('is read back only under its own key, fresh, and only when everything worked', () => {
    const now = Date.now();
    writeProbeCache(dir, KEY_A, sample(), now);
    expect(readProbeCache(dir, KEY_A, now + 1)).toEqual(sample());
    expect(readProbeCache(dir, KEY_B, now + 1)).toBeUndefined();
    expect(readProbeCache(dir, KEY_A, now + PROBE_CACHE_TTL_MS + 1)).toBeUndefined(); // too old
    expect(readProbeCache(dir, KEY_A, now - 1)).toBeUndefined(); // written "in the future": the clock moved
    expect(readProbeCache(undefined, KEY_A, now)).toBeUndefined();
    // A file that says something did not work (written by hand: writeProbeCache is never given one) is not used.
    const kept = JSON.parse(readFileSync(fileFor(KEY_A), 'utf8')) as { probe: { diskQuota: { available: boolean } } };
    kept.probe.diskQuota.available = false;
    writeFileSync(fileFor(KEY_A), JSON.stringify(kept), { mode: 0o600 });
    expect(readProbeCache(dir, KEY_A, now + 1)).toBeUndefined();
    writeFileSync(fileFor(KEY_A), '{ not json', { mode: 0o600 });
    expect(readProbeCache(dir, KEY_A, now + 1)).toBeUndefined();
    // Two keys (two builds, two settings) are kept side by side; one past its time is removed by the next write.
    writeProbeCache(dir, KEY_A, sample('a'), now);
    writeProbeCache(dir, KEY_B, sample('b'), now);
    expect(readProbeCache(dir, KEY_A, now)?.bwrap.version).toBe('a');
    expect(readProbeCache(dir, KEY_B, now)?.bwrap.version).toBe('b');
    utimesSync(fileFor(KEY_A), new Date(now - PROBE_CACHE_TTL_MS - 1_000), new Date(now - PROBE_CACHE_TTL_MS - 1_000));
    writeProbeCache(dir, KEY_B, sample('b'), now);
    expect(existsSync(fileFor(KEY_A))).toBe(false);
    expect(existsSync(fileFor(KEY_B))).toBe(true);
  });

  it('is not trusted when another user could have written it', () => {
    const now = Date.now();
    const fresh = () => writeProbeCache(dir, KEY_A, sample(), now);
    fresh();
    chmodSync(fileFor(KEY_A), 0o666);
    expect(readProbeCache(dir, KEY_A, now)).toBeUndefined();
    fresh(); // replaced by rename: a new private file
    expect(readProbeCache(dir, KEY_A, now)).toEqual(sample());
    chownSync(fileFor(KEY_A), 65534, 65534);
    expect(readProbeCache(dir, KEY_A, now)).toBeUndefined();
    // A folder others may write to (they could swap the file), or the file as a symlink to one elsewhere.
    const open = mkdtempSync(join(tmpdir(), 'paddock-probe-cache-open-'));
    writeProbeCache(open, KEY_A, sample(), now);
    chmodSync(open, 0o777);
    expect(readProbeCache(open, KEY_A, now)).toBeUndefined();
    const linked = mkdtempSync(join(tmpdir(), 'paddock-probe-cache-link-'));
    writeProbeCache(dir, KEY_A, sample(), now);
    symlinkSync(fileFor(KEY_A), join(linked, `machine-probe-${KEY_A.slice(0, 32)}.json`));
    expect(readProbeCache(linked, KEY_A, now)).toBeUndefined();
  });

  it('has a key that changes with what the probe depends on', () => {
    const identity = resolveRunIdentity();
    const base = probeCacheKey(identity, {});
    expect(probeCacheKey(identity, {})).toBe(base);
    expect(probeCacheKey(identity, { PADDOCK_BWRAP: '/bin/false' })).not.toBe(base);
    expect(probeCacheKey({ ...identity, uid: 1234 }, {})).not.toBe(base);
  });

  it('is where PADDOCK_PROBE_CACHE_DIR says, nowhere when it is empty, else /run/paddock for root', () => {
    expect(probeCacheDir({ PADDOCK_PROBE_CACHE_DIR: '/x/y' })).toBe('/x/y');
    expect(probeCacheDir({ PADDOCK_PROBE_CACHE_DIR: '' })).toBeUndefined();
    if (process.getuid?.() === 0) expect(probeCacheDir({})).toBe('/run/paddock');
  });
});

describe('a host process and the kept probe', () => {
  /** `probeMachine()` in a new host process (the source through tsx), its bwrap report. */
  const probeInChild = (env: NodeJS.ProcessEnv = {}) =>
    JSON.parse(
      execFileSync(
        process.execPath,
        [
          '--import',
          'tsx',
          '-e',
          `import { probeMachine } from ${JSON.stringify(repoPath('host/sandbox/probe.ts'))};` +
            'process.stdout.write(JSON.stringify(probeMachine().bwrap));',
        ],
        { cwd: repoPath('.'), encoding: 'utf8', env: { ...process.env, ...env } },
      ),
    ) as { available: boolean; version?: string };

  it('a probe where everything worked is kept; the next process uses it instead of running the helpers', () => {
    const report = probeMachine(true);
    expect(report.bwrap.available && report.diskQuota.available, 'this machine runs the sandbox').toBe(true);
    const key = probeCacheKey(resolveRunIdentity());
    expect(readProbeCache(dir, key)?.bwrap).toEqual(report.bwrap);
    // A kept probe whose version no real bwrap prints: a process that ran the helpers would report the real one.
    writeProbeCache(dir, key, sample());
    expect(probeInChild().version).toBe('bubblewrap canary-from-the-kept-probe');
    // `refresh` (what `paddock doctor` asks for) always probes, and keeps the new answer.
    expect(probeMachine(true).bwrap.version).toBe(report.bwrap.version);
    expect(readProbeCache(dir, key)?.bwrap.version).toBe(report.bwrap.version);
  });

  it('a probe where something did not work is never kept; forgetting drops the kept one', () => {
    writeProbeCache(dir, probeCacheKey(resolveRunIdentity()), sample());
    // A "bwrap" that cannot make a sandbox: probed (not read from the kept probe, whose key differs), not kept.
    const broken = probeInChild({ PADDOCK_BWRAP: '/bin/false' });
    expect(broken.available).toBe(false);
    const good = fileFor(probeCacheKey(resolveRunIdentity()));
    expect(readProbeCache(dir, probeCacheKey(resolveRunIdentity(), { PADDOCK_BWRAP: '/bin/false' }))).toBeUndefined();
    expect(existsSync(good)).toBe(true); // the good probe under its own key is still there
    writeProbeCache(dir, KEY_B, sample()); // and one of another build or setting
    forgetMachineProbe();
    expect(existsSync(good)).toBe(false);
    expect(existsSync(fileFor(KEY_B))).toBe(false);
    expect(probeInChild().version).not.toBe('bubblewrap canary-from-the-kept-probe');
  }, 30_000);
});
