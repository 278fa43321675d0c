import { createHash } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  type Stats,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DiskQuotaMachine } from './diskQuota.js';
import { hostTool } from './hostTools.js';

/**
 * The machine probe's helper results (a real bwrap sandbox, a mounted quota image) kept between host processes of one
 * boot, so each `paddock dispatch` does not start seven helper processes before its run (docs/decisions.md, "Issue 12
 * — the machine probe reused"). Only a probe where both worked is kept, for at most {@link PROBE_CACHE_TTL_MS}, under
 * a key of everything the probe's answer depends on (boot, user, the helpers' binaries, the run identity, the
 * namespace sysctls, this module's build); anything unreadable, foreign or different is ignored and probed afresh.
 * Reusing a stale "works" cannot weaken a run: the run still launches through bwrap and mounts its images, and fails
 * if they do not work, which drops the entry ({@link forgetProbeCache}). A "does not work" is never reused.
 */

/** What is kept: the parts of the machine report that need helper processes. */
export interface CachedProbe {
  bwrap: { available: true; path: string; version?: string };
  diskQuota: DiskQuotaMachine & { available: true };
}

/** How long a kept probe is used: long enough for a burst of CLI dispatches, short enough to notice a change. */
export const PROBE_CACHE_TTL_MS = 10 * 60_000;

/** One file per key (different builds or settings on one machine do not evict each other's probe). */
const fileOf = (key: string) => `machine-probe-${key.slice(0, 32)}.json`;
const KEPT_FILE = /^machine-probe-[0-9a-f]{32}\.json$/;

/**
 * Where the probe is kept: `PADDOCK_PROBE_CACHE_DIR` when set (empty: nowhere), else `/run/paddock` for root,
 * `$XDG_RUNTIME_DIR/paddock` for another user (both emptied at boot on a usual system), else nowhere (undefined:
 * every process probes).
 */
export function probeCacheDir(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.PADDOCK_PROBE_CACHE_DIR !== undefined) return env.PADDOCK_PROBE_CACHE_DIR || undefined;
  if (process.getuid?.() === 0) return existsSync('/run') ? '/run/paddock' : undefined;
  return env.XDG_RUNTIME_DIR ? join(env.XDG_RUNTIME_DIR, 'paddock') : undefined;
}

/** The key of this process's probe: a hash of everything its answer depends on. */
export function probeCacheKey(identity: unknown, env: NodeJS.ProcessEnv = process.env): string {
  const file = (path: string | undefined) => {
    if (!path) return null;
    try {
      const s = statSync(path);
      return [path, s.dev, s.ino, s.size, s.mtimeMs];
    } catch {
      return [path, 'missing'];
    }
  };
  const text = (path: string) => {
    try {
      return readFileSync(path, 'utf8').trim();
    } catch {
      return null;
    }
  };
  const material = {
    boot: text('/proc/sys/kernel/random/boot_id'),
    uid: process.getuid?.(),
    gid: process.getgid?.(),
    tmp: tmpdir(),
    bwrapVariable: env.PADDOCK_BWRAP ?? null,
    tools: ['bwrap', 'mkfs.ext4', 'mount', 'umount', 'unshare', 'setpriv', 'losetup'].map((t) => file(hostTool(t))),
    named: file(env.PADDOCK_BWRAP),
    identity,
    sysctls: [
      '/proc/sys/user/max_user_namespaces',
      '/proc/sys/kernel/unprivileged_userns_clone',
      '/proc/sys/kernel/apparmor_restrict_unprivileged_userns',
    ].map(text),
    // A new build of the probe (this module and its neighbours are rebuilt together) probes again.
    build: file(fileURLToPath(import.meta.url)),
  };
  return createHash('sha256').update(JSON.stringify(material)).digest('hex');
}

/** Whether `stats` is something this process may trust: its own, not writable by others. */
function ownedAndPrivate(stats: Stats): boolean {
  return stats.uid === process.getuid?.() && (stats.mode & 0o022) === 0;
}

/** The kept probe for `key`, if there is one, fresh, and trustworthy; otherwise undefined. */
export function readProbeCache(dir: string | undefined, key: string, now = Date.now()): CachedProbe | undefined {
  if (!dir) return undefined;
  try {
    const dirStats = lstatSync(dir);
    const fileStats = lstatSync(join(dir, fileOf(key)));
    if (!dirStats.isDirectory() || !ownedAndPrivate(dirStats)) return undefined;
    if (!fileStats.isFile() || !ownedAndPrivate(fileStats)) return undefined;
    const kept = JSON.parse(readFileSync(join(dir, fileOf(key)), 'utf8')) as {
      key?: unknown;
      at?: unknown;
      probe?: unknown;
    };
    if (kept.key !== key || typeof kept.at !== 'number') return undefined;
    if (kept.at > now || now - kept.at > PROBE_CACHE_TTL_MS) return undefined;
    const probe = kept.probe as CachedProbe | undefined;
    if (probe?.bwrap?.available !== true || probe.diskQuota?.available !== true) return undefined;
    if (typeof probe.bwrap.path !== 'string' || !probe.diskQuota.tools) return undefined;
    return probe;
  } catch {
    return undefined;
  }
}

/**
 * Keep `probe` under `key` (written whole, then renamed into place), removing kept probes past their time; a failure
 * to write is ignored.
 */
export function writeProbeCache(dir: string | undefined, key: string, probe: CachedProbe, now = Date.now()): void {
  if (!dir) return;
  const temp = join(dir, `.${fileOf(key)}.${process.pid}.${Math.random().toString(36).slice(2)}`);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (!ownedAndPrivate(lstatSync(dir))) return;
    writeFileSync(temp, JSON.stringify({ key, at: now, probe }), { mode: 0o600, flag: 'wx' });
    renameSync(temp, join(dir, fileOf(key)));
    for (const name of readdirSync(dir))
      if (KEPT_FILE.test(name) && now - lstatSync(join(dir, name)).mtimeMs > PROBE_CACHE_TTL_MS)
        rmSync(join(dir, name), { force: true });
  } catch {
    rmSync(temp, { force: true });
  }
}

/** Drop every kept probe: a run found the machine not doing what one said (the next host process probes again). */
export function forgetProbeCache(dir: string | undefined = probeCacheDir()): void {
  if (!dir) return;
  try {
    for (const name of readdirSync(dir)) if (KEPT_FILE.test(name)) rmSync(join(dir, name), { force: true });
  } catch {
    // No folder: nothing kept.
  }
}
