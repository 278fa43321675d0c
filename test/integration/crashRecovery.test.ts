// Crash-point injection with a real host process on the SQLite store (test/helpers/hostCrashPoints.ts): every
// boundary of five scripted sessions.
import { createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { auditKeyPaths } from '../../host/audit/auditKey.js';
import { verifyAudit } from '../../host/audit/verify.js';
import { auditTable } from '../../host/state/auditTable.js';
import {
  hostCrashPointSuite,
  RUNS,
  SCENARIOS,
  type CommittedState,
  type EventRow,
} from '../helpers/hostCrashPoints.js';

/** The data folder's own database file, read as it is: the folder copy carries it. */
const sqliteCrashStore = () => ({
  name: 'sqlite',
  leased: false,
  env: () => ({}),
  read(dataDir: string): CommittedState {
    const db = new Database(join(dataDir, 'paddock.db'), { readonly: true });
    try {
      const events = db
        .prepare('SELECT session_id, seq, type, run_id, data FROM events ORDER BY session_id, seq')
        .all() as EventRow[];
      const runs = db.prepare(RUNS).all() as CommittedState['runs'];
      const audit = verifyAudit(auditTable(db), createPublicKey(readFileSync(auditKeyPaths(dataDir).publicPath)));
      return { events, runs, audit };
    } finally {
      db.close();
    }
  },
  reset: () => {},
  keep: () => {},
  close: () => {},
});

hostCrashPointSuite(sqliteCrashStore, Object.values(SCENARIOS));
