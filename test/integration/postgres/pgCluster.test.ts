// The throwaway PostgreSQL cluster of tests and CI (scripts/pg-cluster.sh, docs/scale-out.md §6): started in a temp
// folder as a non-root user, reachable on its socket, gone after stop, and a loud failure where PostgreSQL is missing.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PgDb } from '../../../host/state/pg/pgDb.js';
import { startPgCluster, type PgCluster } from '../../helpers/pgCluster.js';

describe('the throwaway PostgreSQL cluster', () => {
  let cluster: PgCluster | undefined;
  afterAll(() => cluster?.stop());

  it('starts in its folder as a non-root user, answers on its socket, and is gone after stop', () => {
    cluster = startPgCluster();
    const db = new PgDb(cluster.url);
    const row = db
      .prepare(
        "SELECT current_setting('server_version_num')::int AS version, current_setting('data_directory') AS data, " +
          "current_setting('listen_addresses') AS listen, current_setting('fsync') AS fsync",
      )
      .get() as { version: number; data: string; listen: string; fsync: string };
    db.close();
    expect(row.fsync).toBe('off'); // a test's cluster: commits reach the kernel, not the disk (pg-cluster.sh)
    expect(row.version).toBeGreaterThanOrEqual(150000);
    expect(row.data).toBe(join(cluster.dir, 'data'));
    expect(row.listen).toBe(''); // no TCP unless a port is asked for
    // The postmaster's pid is the first line of postmaster.pid; its owner is never root (PostgreSQL refuses root).
    const pid = readFileSync(join(cluster.dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]!;
    expect(statSync(`/proc/${pid}`).uid).not.toBe(0);
    const dir = cluster.dir;
    cluster.stop();
    expect(existsSync(dir)).toBe(false);
    // Gone, or a zombie waiting for whoever adopted the daemonized server to reap it: either way not running.
    const state = existsSync(`/proc/${pid}/stat`)
      ? readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]![0]
      : 'gone';
    expect(['gone', 'Z']).toContain(state);
  });

  it('fsyncs when asked (benches: their figures pay what a real server pays)', () => {
    const durable = startPgCluster({ fsync: true });
    try {
      const db = new PgDb(durable.url);
      const fsync = db.prepare("SELECT current_setting('fsync') AS fsync").pluck().get();
      db.close();
      expect(fsync).toBe('on');
    } finally {
      durable.stop();
    }
  });

  it('fails loudly, naming the install, without the server binaries (a test needing them fails, never skips)', () => {
    const empty = mkdtempSync(join(tmpdir(), 'paddock-no-pg-'));
    const before = process.env.PADDOCK_PG_BINDIR;
    process.env.PADDOCK_PG_BINDIR = empty;
    try {
      expect(() => startPgCluster()).toThrow(/server binaries not found .*apt-get install postgresql/s);
    } finally {
      if (before === undefined) delete process.env.PADDOCK_PG_BINDIR;
      else process.env.PADDOCK_PG_BINDIR = before;
      rmSync(empty, { recursive: true, force: true });
    }
    // And the script says so with a non-zero exit of its own.
    expect(() =>
      execFileSync('bash', ['scripts/pg-cluster.sh', 'start', join(tmpdir(), 'never')], {
        env: { ...process.env, PADDOCK_PG_BINDIR: '/nonexistent' },
        stdio: 'pipe',
      }),
    ).toThrow(/exit code 1|status 1|Command failed/);
  });
});
