// Crash-point injection with a real host process on the PostgreSQL store (test/helpers/hostCrashPoints.ts; issue 17:
// "the crash-point tests on both"): every boundary of the echo session — a first run and a later one in the same
// session, each effect's intent/act gap, and a second kill during recovery — with each data folder's state in a
// database of its own on a throwaway cluster. The hosts hold a lease (the shortest, 1 s): a queued run a killed host
// never claimed is handed on by its start's takeover, which the restarted host makes once that lease ran out.
import { createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { auditKeyPaths } from '../../../host/audit/auditKey.js';
import { verifyAudit } from '../../../host/audit/verify.js';
import { auditTable } from '../../../host/state/auditTable.js';
import { PgDb } from '../../../host/state/pg/pgDb.js';
import {
  hostCrashPointSuite,
  RUNS,
  SCENARIOS,
  type CommittedState,
  type EventRow,
} from '../../helpers/hostCrashPoints.js';
import { queryPg, startPgCluster, type PgCluster } from '../../helpers/pgCluster.js';

/** A database per data folder (named after the folder), and a template database per kept template. */
function postgresCrashStore() {
  const cluster: PgCluster = startPgCluster();
  const nameOf = (dir: string) =>
    `crash_${basename(dir)
      .replace(/[^a-z0-9]/gi, '_')
      .toLowerCase()}`;
  const urlOf = (dir: string) => cluster.url.replace('/paddock?', `/${nameOf(dir)}?`);
  const admin = (sql: string) => queryPg(cluster.url.replace('/paddock?', '/postgres?'), sql);
  return {
    name: 'postgres',
    leased: true,
    env: (dataDir: string) => ({ PADDOCK_DATABASE_URL: urlOf(dataDir), PADDOCK_LEASE_MS: '1000' }),
    read(dataDir: string): CommittedState {
      const db = new PgDb(urlOf(dataDir));
      try {
        const events = (
          db
            .prepare('SELECT session_id, seq, type, run_id, data FROM events ORDER BY session_id, seq')
            .all() as EventRow[]
        ).map((e) => ({ ...e, seq: Number(e.seq) }));
        const runs = (db.prepare(RUNS).all() as CommittedState['runs']).map((r) => ({
          ...r,
          pid: r.pid === null ? null : Number(r.pid),
          pid_start: r.pid_start === null ? null : Number(r.pid_start),
        }));
        const audit = verifyAudit(auditTable(db), createPublicKey(readFileSync(auditKeyPaths(dataDir).publicPath)));
        return { events, runs, audit };
      } finally {
        db.close();
      }
    },
    reset(dataDir: string, template?: string) {
      admin(`DROP DATABASE IF EXISTS ${nameOf(dataDir)}`);
      admin(`CREATE DATABASE ${nameOf(dataDir)}${template ? ` TEMPLATE ${nameOf(template)}` : ''}`);
    },
    keep(dataDir: string, template: string) {
      admin(`CREATE DATABASE ${nameOf(template)} TEMPLATE ${nameOf(dataDir)}`);
    },
    close: () => cluster.stop(),
  };
}

hostCrashPointSuite(postgresCrashStore, [SCENARIOS.echo]);
