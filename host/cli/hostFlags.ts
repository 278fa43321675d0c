// The host configuration a command runs with, from its flags and the environment. Loaded only by
// commands that need it (it pulls in the zod limits schema).
import { resolve } from 'node:path';
import { resolveDataDir } from '../config/dataDir.js';
import type { HostConfig } from '../config/hostConfig.js';
import { parseLimits } from '../config/limits.js';
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

/** A positive whole number of milliseconds. */
export function parsePositiveInt(flag: string, text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n <= 0)
    throw new UsageError(`${flag} must be a positive whole number of milliseconds, got ${JSON.stringify(text)}`);
  return n;
}

/** A JSON object flag (`--config '{"delayMs":100}'`). */
export function parseJsonObjectFlag(flag: string, text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${flag} is not valid JSON: ${(error as Error).message}`);
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
    limits: parseLimits(str('timeout') ? { wallClockMs: parsePositiveInt('--timeout', str('timeout')!) } : {}),
    runnerDirs: [
      ...pathList(process.env.PADDOCK_RUNNER_DIRS),
      ...((flags['runner-dir'] as string[] | undefined) ?? []).map((d) => resolve(d)),
    ],
    mountRoots: pathList(process.env.PADDOCK_MOUNT_ROOTS),
    logLevel: process.env.PADDOCK_LOG_LEVEL ?? 'warn',
    keepWorkspaces: flags['keep-workspace'] === true,
    durability: parseDurability(str('durability') ?? process.env.PADDOCK_DURABILITY),
  };
}
