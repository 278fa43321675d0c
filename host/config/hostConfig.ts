import type { StoreHooks } from './storeHooks.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PACKAGE_ROOT } from './packageRoot.js';
import type { HostLimits } from './limits.js';

/** The configuration the host runs with (the YAML config file arrives with bindings). */
export interface HostConfig {
  dataDir: string;
  limits: HostLimits;
  /** Extra folders searched for runners by name, after the built-in ones. */
  runnerDirs: string[];
  logLevel: string;
  /** Keep run workspaces after the run (default: removed). */
  keepWorkspaces: boolean;
  /**
   * A PostgreSQL database for the store instead of `<dataDir>/paddock.db` (`PADDOCK_DATABASE_URL`, `--database-url`;
   * docs/scale-out.md). A secret: it may hold a password (config/databaseUrl.ts). The data folder still holds the
   * audit key, sockets, workspaces and session folders.
   */
  databaseUrl?: string;
  /** How long this host's lease on a shared store lasts, in ms (`PADDOCK_LEASE_MS`; default 15 s; scale-out.md §4). */
  leaseMs?: number;
  /** SQLite durability: `normal` survives a host crash, `full` also a power loss. */
  durability?: 'normal' | 'full';
  /** Host directories under which mount resources may lie (none: mounts are refused). */
  mountRoots?: string[];
  /** Runs at once in this host process, over all bindings (default 4). */
  maxConcurrentRuns?: number;
  /** Runs waiting in this host process, over all sessions (default 256). */
  maxQueuedRuns?: number;
  /**
   * Runs of one tenant waiting, over all its sessions and every host process on the data folder (default 64): one
   * tenant's flood of new conversations cannot fill the host's queue (`serve --max-queued-per-tenant`).
   */
  maxQueuedRunsPerTenant?: number;
  /** Kept workspaces (and ones a stopped host left) are removed at start once older than this (default 7 days). */
  workspaceTtlMs?: number;
  /** Session folders (harness resume state) unused for this long are removed at start (default 30 days). */
  sessionTtlMs?: number;
  /**
   * Host helper programs (mkfs, mount, umount, chown…) running at once through the process's helper spawner (default
   * eight per core); more wait their turn, each one's timeout starting when it starts. One spawner serves every host of
   * a process: the last host configured with this sets it for all (docs/admin-guide.md).
   */
  helperConcurrency?: number;
  /**
   * How long the runner spawner may say nothing while it owes a runner's start before it is killed as lost (default
   * 10 s; its runs end `crashed`, the start fails, the next starts a new spawner: decisions SP4). One spawner serves
   * every host of a process: the last host configured with this sets it for all (docs/admin-guide.md).
   */
  runnerSpawnerAnswerMs?: number;
  /** Where the pinned harness CLIs are installed (default `<package>/.harness`, scripts/install-harnesses.sh). */
  harnessDir?: string;
  /**
   * Observation hooks of the store (docs/state.md "Store hooks"): for embedders and tests, never set from the command
   * line.
   */
  storeHooks?: StoreHooks;
}

/** Host-wide dispatch defaults. */
export const DISPATCH_DEFAULTS = {
  maxConcurrentRuns: 4,
  maxQueuedRuns: 256,
  maxQueuedRunsPerTenant: 64,
  workspaceTtlMs: 7 * 24 * 3600 * 1000,
  sessionTtlMs: 30 * 24 * 3600 * 1000,
} as const;

const pkg = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string };

/** How the host names itself in `initialize`. */
export const HOST_INFO = { name: 'paddock', version: pkg.version } as const;
