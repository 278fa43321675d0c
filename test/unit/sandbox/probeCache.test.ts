// The machine probe kept between host processes of one boot (host/sandbox/probeCache.ts): what is kept, what is
// never trusted, and that a host process really uses it instead of running the helpers. The tests keep their probes
// in their own folder (PADDOCK_PROBE_CACHE_DIR), never in the machine's /run/paddock.
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
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
const FILE = join(dir, 'machine-probe.json');

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
    writeProbeCache(dir, 'key-a', sample(), now);
    expect(readProbeCache(dir, 'key-a', now + 1)).toEqual(sample());
    expect(readProbeCache(dir, 'key-b', now + 1)).toBeUndefined();
    expect(readProbeCache(dir, 'key-a', now + PROBE_CACHE_TTL_MS + 1)).toBeUndefined(); // too old
    expect(readProbeCache(dir, 'key-a', now - 1)).toBeUndefined(); // written "in the future": the clock moved
    expect(readProbeCache(undefined, 'key-a', now)).toBeUndefined();
    // A file that says something did not work (written by hand: writeProbeCache is never given one) is not used.
    const kept = JSON.parse(readFileSync(FILE, 'utf8')) as { probe: { diskQuota: { available: boolean } } };
    kept.probe.diskQuota.available = false;
    writeFileSync(FILE, JSON.stringify(kept), { mode: 0o600 });
    expect(readProbeCache(dir, 'key-a', now + 1)).toBeUndefined();
    writeFileSync(FILE, '{ not json', { mode: 0o600 });
    expect(readProbeCache(dir, 'key-a', now + 1)).toBeUndefined();
  });

  it('is not trusted when another user could have written it', () => {
    const now = Date.now();
    const fresh = () => writeProbeCache(dir, 'k', sample(), now);
    fresh();
    chmodSync(FILE, 0o666);
    expect(readProbeCache(dir, 'k', now)).toBeUndefined();
    fresh(); // replaced by rename: a new private file
    expect(readProbeCache(dir, 'k', now)).toEqual(sample());
    chownSync(FILE, 65534, 65534);
    expect(readProbeCache(dir, 'k', now)).toBeUndefined();
    // A folder others may write to (they could swap the file), or the file as a symlink to one elsewhere.
    const open = mkdtempSync(join(tmpdir(), 'paddock-probe-cache-open-'));
    writeProbeCache(open, 'k', sample(), now);
    chmodSync(open, 0o777);
    expect(readProbeCache(open, 'k', now)).toBeUndefined();
    const linked = mkdtempSync(join(tmpdir(), 'paddock-probe-cache-link-'));
    writeProbeCache(dir, 'k', sample(), now);
    symlinkSync(FILE, join(linked, 'machine-probe.json'));
    expect(readProbeCache(linked, 'k', now)).toBeUndefined();
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
    expect(readProbeCache(dir, probeCacheKey(resolveRunIdentity(), { PADDOCK_BWRAP: '/bin/false' }))).toBeUndefined();
    expect(existsSync(FILE)).toBe(true); // the good probe under its own key is still there
    forgetMachineProbe();
    expect(existsSync(FILE)).toBe(false);
    expect(probeInChild().version).not.toBe('bubblewrap canary-from-the-kept-probe');
  }, 30_000);
});
