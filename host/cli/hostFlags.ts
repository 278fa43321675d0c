// The host configuration a command runs with, from its flags and the environment. Loaded only by
// commands that need it (it pulls in the zod limits schema).
import { resolve } from 'node:path';
import { resolveDataDir } from '../config/dataDir.js';
import { parseDatabaseUrl } from '../config/databaseUrl.js';
import type { HostConfig } from '../config/hostConfig.js';
import { parseLimits } from '../config/limits.js';
import { jsonDepth, MAX_JSON_DEPTH } from '../../sdk/transport/jsonDepth.js';
import { clip } from '../util/clip.js';
import { UsageError, type Flags } from './spec.js';

/** Absolute folders from a colon-separated list (empty entries dropped). */
function pathList(text: string | undefined): string[] {
  return (text ?? '')
    .split(':')
    .filter(Boolean)
    .map((d) => resolve(d));
}

/** `--durability` (or PADDOCK_DURABILITY): `normal` or `full`. */
export function parseDurability(text: string | undefined): 'normal' | 'full' {
  if (text === undefined || text === 'normal' || text === 'full') return text ?? 'normal';
  throw new UsageError(`--durability (or PADDOCK_DURABILITY) must be normal or full, got ${JSON.stringify(text)}`);
}

/**
 * `PADDOCK_LEASE_MS`: how long a host's lease on a shared store lasts (docs/scale-out.md §4), 1,000 to 600,000 ms;
 * absent: the default (15 s).
 */
export function parseLeaseMs(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = /^[0-9]{4,6}$/.test(text) ? Number(text) : NaN;
  if (!(n >= 1_000 && n <= 600_000))
    throw new UsageError(
      'PADDOCK_LEASE_MS must be a whole number of milliseconds from 1000 to 600000, got ' +
        JSON.stringify(text.slice(0, 40)),
    );
  return n;
}

/** Longest delay a Node timer takes (2^31 - 1 ms, about 24.8 days); a longer one fires after 1 ms. */
export const MAX_TIMER_MS = 2_147_483_647;

/** Longest JSON option value (`--config`), in bytes, and its deepest nesting (the protocol's). */
const MAX_JSON_FLAG_BYTES = 1024 * 1024;

/**
 * A whole number of milliseconds from 1 to {@link MAX_TIMER_MS}, written in decimal digits only:
 * `0x10`, `1e3`, ` 5000`, `5000.0` and `-1` are usage errors naming the flag, never read as
 * something else.
 */
export function parsePositiveInt(flag: string, text: string): number {
  const n = /^[0-9]{1,16}$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n) || n < 1 || n > MAX_TIMER_MS)
    throw new UsageError(
      `${flag} must be a whole number of milliseconds from 1 to ${MAX_TIMER_MS} (decimal digits only), ` +
        `got ${JSON.stringify(clip(text, 40))}`,
    );
  return n;
}

/**
 * A JSON object flag (`--config '{"delayMs":100}'`): at most 1 MiB and nested at most the
 * protocol's `MAX_JSON_DEPTH` levels (checked by a scan before parsing, so a 5,000-deep value is a
 * usage error, not a stack overflow later), else a usage error naming the flag.
 */
export function parseJsonObjectFlag(flag: string, text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  const bytes = Buffer.byteLength(text);
  if (bytes > MAX_JSON_FLAG_BYTES)
    throw new UsageError(`${flag} is ${bytes} bytes of JSON; the limit is ${MAX_JSON_FLAG_BYTES}`);
  if (jsonDepth(text, MAX_JSON_DEPTH) > MAX_JSON_DEPTH)
    throw new UsageError(`${flag} nests deeper than ${MAX_JSON_DEPTH} levels of arrays and objects`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${flag} is not valid JSON: ${clip((error as Error).message, 200)}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new UsageError(`${flag} must be a JSON object`);
  return value as Record<string, unknown>;
}

/** The host configuration of one CLI call (flags a command does not take are simply absent). */
export function hostConfigFromFlags(flags: Flags): HostConfig {
  const str = (name: string) => flags[name] as string | undefined;
  return {
    dataDir: resolveDataDir(str('data-dir')),
    limits: parseLimits(
      str('timeout') !== undefined ? { wallClockMs: parsePositiveInt('--timeout', str('timeout')!) } : {},
    ),
    runnerDirs: [
      ...pathList(process.env.PADDOCK_RUNNER_DIRS),
      ...((flags['runner-dir'] as string[] | undefined) ?? []).map((d) => resolve(d)),
    ],
    mountRoots: pathList(process.env.PADDOCK_MOUNT_ROOTS),
    logLevel: process.env.PADDOCK_LOG_LEVEL ?? 'warn',
    keepWorkspaces: flags['keep-workspace'] === true,
    durability: parseDurability(str('durability') ?? process.env.PADDOCK_DURABILITY),
    ...databaseUrlOf(str('database-url')),
    ...(process.env.PADDOCK_LEASE_MS !== undefined ? { leaseMs: parseLeaseMs(process.env.PADDOCK_LEASE_MS) } : {}),
  };
}

/**
 * `--database-url` (never with a password: the command line is visible to every user) or `PADDOCK_DATABASE_URL`; the
 * flag wins. Absent when neither is set: the data folder's SQLite store.
 */
function databaseUrlOf(flag: string | undefined): { databaseUrl?: string } {
  const url =
    flag !== undefined
      ? parseDatabaseUrl(flag, '--database-url', { noPassword: true })
      : parseDatabaseUrl(process.env.PADDOCK_DATABASE_URL, 'PADDOCK_DATABASE_URL');
  return url === undefined ? {} : { databaseUrl: url };
}
