import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** A machine as npm matches a package's `os`, `cpu` and `libc` fields against it. */
export interface Machine {
  os: string;
  cpu: string;
  /** `glibc` or `musl` on Linux; null elsewhere. */
  libc: 'glibc' | 'musl' | null;
}

/** This machine (libc from Node's own report header, as npm finds it). */
export function thisMachine(): Machine {
  const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header;
  const libc = process.platform !== 'linux' ? null : header?.glibcVersionRuntime ? 'glibc' : 'musl';
  return { os: process.platform, cpu: process.arch, libc };
}

/** One package npm will put on disk: its folder below the prefix (`node_modules/a/node_modules/b`) and version. */
export interface LockedPackage {
  path: string;
  version: string;
}

/**
 * Whether a lock entry's `os`, `cpu` or `libc` list admits `value`, by npm's rule: no list admits anything; a list of
 * names admits those; `!name` entries exclude theirs.
 */
function admits(list: unknown, value: string | null): boolean {
  if (!Array.isArray(list) || list.length === 0) return true;
  if (value === null) return false;
  const names = list.filter((x): x is string => typeof x === 'string');
  if (names.includes(`!${value}`)) return false;
  const wanted = names.filter((x) => !x.startsWith('!'));
  return wanted.length === 0 || wanted.includes(value);
}

/**
 * The packages an install from `lock` (a package-lock.json, parsed) puts on `machine`: every entry but the root,
 * links, packages bundled inside another, dev packages when `omitDev`, and optional packages for another platform
 * (the harness's native CLIs come as one optional package per os, cpu and libc).
 */
export function packagesToInstall(lock: unknown, machine: Machine = thisMachine(), omitDev = false): LockedPackage[] {
  const packages = (lock as { packages?: Record<string, Record<string, unknown>> } | null)?.packages ?? {};
  return Object.entries(packages)
    .filter(([path, p]) => path !== '' && p.link !== true && p.inBundle !== true && !(omitDev && p.dev === true))
    .filter(([, p]) => admits(p.os, machine.os) && admits(p.cpu, machine.cpu) && admits(p.libc, machine.libc))
    .map(([path, p]) => ({ path, version: typeof p.version === 'string' ? p.version : '' }));
}

/** How many of `packages` are on disk under `prefix` at their locked version (their package.json says so). */
export function installedCount(prefix: string, packages: readonly LockedPackage[]): number {
  let count = 0;
  for (const { path, version } of packages) {
    try {
      const manifest = JSON.parse(readFileSync(join(prefix, path, 'package.json'), 'utf8')) as { version?: unknown };
      if (manifest.version === version) count++;
    } catch {
      // not there yet (or half written): not counted
    }
  }
  return count;
}

/** Bytes of the files below `dir`, links not followed; 0 when it does not exist. */
export function bytesUnder(dir: string): number {
  let total = 0;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  for (const name of names) {
    const path = join(dir, name);
    const st = lstatSync(path, { throwIfNoEntry: false });
    if (st?.isDirectory()) total += bytesUnder(path);
    else if (st?.isFile()) total += st.size;
  }
  return total;
}

/** How far an install is: packages on disk of those it will put there, and bytes below its node_modules. */
export interface InstallProgress {
  done: number;
  total: number;
  bytes: number;
}

/** How an install is watched. */
export interface WatchOptions {
  /** How often `onProgress` hears (ms). */
  everyMs?: number;
  /**
   * The most of the wall time the byte count may take: walking the tree costs about 0.15 s for the 9,000 files of the
   * harness CLIs on a quiet machine and several times that under load, so the bytes are counted again only after a
   * pause of `(1 - share) / share` times the last walk (default 5 %); the package count is read at every report.
   */
  maxShare?: number;
  /** The clock (ms). */
  now?: () => number;
}

/**
 * Watch an npm install into `prefix` of `packages` (from its lock, {@link packagesToInstall}): every `everyMs`,
 * `onProgress` hears how many are on disk at their locked version and the bytes below `node_modules/`, counted no
 * more often than `maxShare` allows. Answers a function that stops the watch and reports once more, bytes counted.
 */
export function watchInstall(
  prefix: string,
  packages: readonly LockedPackage[],
  onProgress: (progress: InstallProgress) => void,
  options: WatchOptions = {},
): () => InstallProgress {
  const { everyMs = 2000, maxShare = 0.05, now = () => performance.now() } = options;
  let bytes = 0;
  let bytesDueAt = 0;
  const measure = (countBytes: boolean): InstallProgress => {
    const at = now();
    if (countBytes || at >= bytesDueAt) {
      bytes = bytesUnder(join(prefix, 'node_modules'));
      const took = now() - at;
      bytesDueAt = at + took + (took * (1 - maxShare)) / maxShare;
    }
    return { done: installedCount(prefix, packages), total: packages.length, bytes };
  };
  const timer = setInterval(() => onProgress(measure(false)), everyMs);
  return () => {
    clearInterval(timer);
    const last = measure(true);
    onProgress(last);
    return last;
  };
}
