import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PgDb } from '../../host/state/pg/pgDb.js';

const SCRIPT = fileURLToPath(new URL('../../scripts/pg-cluster.sh', import.meta.url));

/** A throwaway PostgreSQL cluster (scripts/pg-cluster.sh): its URL and how to tear it down. */
export interface PgCluster {
  /** `postgresql:///paddock?host=<socket dir>&user=postgres[&port=N]`: the Unix socket in the cluster's folder. */
  url: string;
  dir: string;
  /** Restart the server as an operator would (`pg_ctl restart -m fast`): every connection to it is ended. */
  restart(): void;
  /** Stop the server and remove its folder (idempotent). */
  stop(): void;
}

/**
 * Start a cluster in a new temporary folder. Where PostgreSQL is missing this throws with the script's message
 * (naming `apt-get install postgresql`): a test that needs PostgreSQL fails, it never skips. Without `fsync: true` the
 * server does not fsync (scripts/pg-cluster.sh, PG_CLUSTER_FSYNC): a commit still reaches the kernel before it
 * returns, so every crash a test makes (a killed host, a killed server) keeps it; benches ask for fsync.
 */
export function startPgCluster(options: { port?: number; fsync?: boolean } = {}): PgCluster {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-pg-'));
  const args = ['start', dir, ...(options.port ? [String(options.port)] : [])];
  const env = { ...process.env, PG_CLUSTER_FSYNC: options.fsync ? 'on' : 'off' };
  let url: string;
  try {
    url = execFileSync('bash', [SCRIPT, ...args], { encoding: 'utf8', env, stdio: ['ignore', 'pipe', 'pipe'] }).trim();
  } catch (error) {
    const stderr = String((error as { stderr?: unknown }).stderr ?? '');
    try {
      execFileSync('bash', [SCRIPT, 'stop', dir], { stdio: 'ignore' });
    } catch {
      // the start's own error below says what went wrong
    }
    throw new Error(`cannot start a PostgreSQL cluster for the test: ${stderr || String(error)}`, { cause: error });
  }
  let stopped = false;
  return {
    url,
    dir,
    restart() {
      execFileSync('bash', [SCRIPT, 'restart', dir], { stdio: 'ignore' });
    },
    stop() {
      if (stopped) return;
      stopped = true;
      execFileSync('bash', [SCRIPT, 'stop', dir], { stdio: 'ignore' });
    },
  };
}

/** One statement on the database at `url`, on a connection of its own (opened and closed here): its rows. */
export function queryPg(url: string, sql: string, ...params: unknown[]): Record<string, unknown>[] {
  const db = new PgDb(url);
  try {
    return db.prepare(sql).all(...params) as Record<string, unknown>[];
  } finally {
    db.close();
  }
}
