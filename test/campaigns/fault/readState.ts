// A data folder's committed state as the fault campaign checks it: events, runs, and the audit chain verified.
import { createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { auditKeyPaths } from '../../../host/audit/auditKey.js';
import { verifyAudit } from '../../../host/audit/verify.js';
import { auditTable } from '../../../host/state/auditTable.js';
import type { EventRow, RunRow } from './invariants.js';

/** The state read in one read-only connection; `audit` is the library verification `paddock audit verify` runs. */
export interface DataState {
  events: EventRow[];
  runs: RunRow[];
  audit: { ok: boolean } & Record<string, unknown>;
}

/** Reads the events, runs and audit verification of the data folder at `dataDir`. */
export function readState(dataDir: string): DataState {
  const db = new Database(join(dataDir, 'paddock.db'), { readonly: true });
  try {
    const events = db
      .prepare('SELECT session_id, seq, type, run_id, data FROM events ORDER BY session_id, seq')
      .all() as EventRow[];
    const runs = db.prepare('SELECT id, status, pid, pid_start FROM runs').all() as RunRow[];
    const key = createPublicKey(readFileSync(auditKeyPaths(dataDir).publicPath));
    const audit = verifyAudit(auditTable(db), key) as unknown as DataState['audit'];
    return { events, runs, audit };
  } finally {
    db.close();
  }
}
