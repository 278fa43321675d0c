import { RpcError } from '../../sdk/protocol/rpcError.js';
import { ErrorCodes } from '../../sdk/protocol/errorCodes.js';
import type { JsonValue } from '../../sdk/protocol/types.js';
import type { Redactor } from '../audit/auditLog.js';
import type { Db } from './db.js';
import { DEFAULT_TENANT } from '../config/tenant.js';

/** Caps on runner state (docs/state.md, "Runner state"). */
export const RUNNER_STATE_LIMITS = { maxValueBytes: 64 * 1024, maxKeysPerScope: 1_000 } as const;

/**
 * Scope of a run's state: its binding, or its binding and session — within its session's tenant. A binding moved to
 * another tenant starts with empty binding state there and never reads the old tenant's (the `default` tenant keeps
 * the scope names stored before tenants).
 */
export function stateScope(
  bindingId: string,
  sessionId: string,
  per: 'session' | 'binding',
  tenant: string = DEFAULT_TENANT,
): string {
  const scope = per === 'binding' ? `binding:${bindingId}` : `binding:${bindingId}/session:${sessionId}`;
  return tenant === DEFAULT_TENANT ? scope : `tenant:${tenant}/${scope}`;
}

/**
 * Host-owned key/value state of runners. The scope always comes from the run, never the runner.
 * Keys and values pass the host's redactor before they are stored, like every other stored byte,
 * so `get` returns the redacted value (a secret a runner stored reads back as `[REDACTED]`), and a
 * key holding a secret is stored, read and deleted under its redacted name.
 */
export class RunnerStateRepo {
  private readonly getStmt;
  private readonly upsertStmt;
  private readonly deleteStmt;
  private readonly countStmt;
  private readonly existsStmt;

  constructor(
    private readonly db: Db,
    private readonly redact: Redactor = (v) => v,
  ) {
    this.getStmt = db.prepare('SELECT value FROM runner_state WHERE scope = ? AND key = ?').pluck();
    this.upsertStmt = db.prepare(
      'INSERT INTO runner_state (scope, key, value, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (scope, key) ' +
        'DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at',
    );
    this.deleteStmt = db.prepare('DELETE FROM runner_state WHERE scope = ? AND key = ?');
    this.countStmt = db.prepare('SELECT count(*) FROM runner_state WHERE scope = ?').pluck();
    this.existsStmt = db.prepare('SELECT 1 FROM runner_state WHERE scope = ? AND key = ?').pluck();
  }

  get(scope: string, key: string): { found: boolean; value?: JsonValue } {
    const raw = this.getStmt.get(scope, this.redact(key) as string) as string | undefined;
    return raw === undefined ? { found: false } : { found: true, value: JSON.parse(raw) as JsonValue };
  }

  /** Set a value; over a cap → `QuotaExceeded` with `data.limit` and `data.deniedBy` (a refusal: audited). */
  set(scope: string, rawKey: string, value: JsonValue): void {
    const key = this.redact(rawKey) as string;
    const text = JSON.stringify(this.redact(value));
    const bytes = Buffer.byteLength(text);
    if (bytes > RUNNER_STATE_LIMITS.maxValueBytes) {
      throw new RpcError(
        ErrorCodes.QuotaExceeded,
        `state value for ${JSON.stringify(key)} is ${bytes} bytes; the limit is ${RUNNER_STATE_LIMITS.maxValueBytes}`,
        { limit: 'maxValueBytes', deniedBy: 'state.maxValueBytes' },
      );
    }
    this.db.transaction(() => {
      if (
        !this.existsStmt.get(scope, key) &&
        (this.countStmt.get(scope) as number) >= RUNNER_STATE_LIMITS.maxKeysPerScope
      ) {
        throw new RpcError(
          ErrorCodes.QuotaExceeded,
          `state already holds ${RUNNER_STATE_LIMITS.maxKeysPerScope} keys`,
          { limit: 'maxKeysPerScope', deniedBy: 'state.maxKeysPerScope' },
        );
      }
      this.upsertStmt.run(scope, key, text, new Date().toISOString());
    })();
  }

  delete(scope: string, key: string): boolean {
    return this.deleteStmt.run(scope, this.redact(key) as string).changes > 0;
  }
}
