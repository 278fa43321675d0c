/** Why a host operation failed. Callers branch on `code`, never on the message. Never crosses the wire. */
export type HostErrorCode =
  | 'RUNNER_NOT_FOUND'
  | 'MANIFEST_INVALID'
  | 'RUNNER_SPAWN_FAILED'
  | 'RUNNER_BUILD_FAILED'
  | 'INVALID_INPUT'
  | 'MIGRATION_FAILED'
  | 'STATE_CORRUPT'
  | 'STATE_LOCKED'
  | 'STATE_UNAVAILABLE'
  | 'STATE_FULL'
  | 'SESSION_PAUSED'
  | 'NOT_FOUND'
  | 'CONFIG_INVALID'
  | 'DISPATCH_REFUSED'
  | 'RUN_REFUSED'
  | 'QUOTA_EXCEEDED'
  /** A runner package was not installed, updated or removed: `data.reason` says why (docs/runner-packages.md). */
  | 'PACKAGE_REFUSED'
  /**
   * This host no longer owns the run it wrote about: its lease ran out and another host took its runs over, or the run
   * was re-owned (docs/scale-out.md §4). The write was refused; the host must stop the run (and, lease lost, exit).
   */
  | 'LEASE_LOST';

/** A host-side failure with a stable code, typed data and an optional cause. */
export class HostError extends Error {
  override readonly name = 'HostError';
  constructor(
    readonly code: HostErrorCode,
    message: string,
    readonly data: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
