// A host whose store connection is lost keeps serving (host/state/pg/pgDb.ts, decision PH7): two real `paddock serve`
// processes on one throwaway PostgreSQL cluster, each with its own data folder and a 6 s lease. Their store
// connections are ended with pg_terminate_backend while they are idle, then while a run is held on one of them, then
// while the database refuses connections for a moment (also while a held run ends: its end, failed, is stored once
// the database takes connections again; it once stayed running for ever, PH9), and then the whole server is
// restarted (`pg_ctl restart -m fast`, shorter than the lease). Each time both hosts open a new connection, a held
// run ends exactly once, and a following event runs to completion on each host.
import { cpSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORE_APPLICATION_NAME } from '../../../host/state/pg/pgDb.js';
import { applyWithPlatformToken, echoAndHeldBindings } from '../../helpers/cli.js';
import { chatEvent, FIXTURE_RUNNERS } from '../../helpers/host.js';
import { queryPg, startPgCluster, type PgCluster } from '../../helpers/pgCluster.js';
import { rendezvous } from '../../helpers/rendezvous.js';
import { startServe, stopHostsThen, type ServeChild } from '../../helpers/serve.js';
import { dispatchTo, runFrom } from '../../helpers/serveApi.js';

const homeA = mkdtempSync(join(tmpdir(), 'paddock-pg-reconnect-a-'));
const homeB = mkdtempSync(join(tmpdir(), 'paddock-pg-reconnect-b-'));
const rv = rendezvous(homeA);
let cluster: PgCluster;
let env: Record<string, string>;
let hostA: ServeChild | undefined;
let hostB: ServeChild | undefined;
let token = '';
const LEASE_MS = 6_000;

const dispatch = (host: ServeChild, event: unknown) => dispatchTo(host, token, event);

const runOn = (host: ServeChild, runId: string) => runFrom(host, token, runId);

/** One query as the owner, on a connection named apart from the hosts' store connections; on `paddock` by default. */
function query(sql: string, ...params: unknown[]): Record<string, unknown>[] {
  return queryOn('paddock', sql, ...params);
}

/** {@link query} on one of the cluster's databases (`postgres` stays reachable while `paddock` refuses). */
function queryOn(database: string, sql: string, ...params: unknown[]): Record<string, unknown>[] {
  return queryPg(`${cluster.url.replace('/paddock?', `/${database}?`)}&application_name=paddock-test`, sql, ...params);
}

/** The backends of the hosts' store connections now. */
const storeBackends = () =>
  queryOn(
    'postgres',
    'SELECT pid FROM pg_stat_activity WHERE application_name = ? ORDER BY pid',
    STORE_APPLICATION_NAME,
  ).map((r) => Number(r.pid));

/** End every host's store connection, and wait (synchronously, the hosts are other processes) until they are gone. */
function terminateStoreConnections(hosts = 2): number[] {
  const pids = storeBackends();
  expect(pids).toHaveLength(hosts); // one per host
  for (const pid of pids) expect(queryOn('postgres', 'SELECT pg_terminate_backend(?) AS ok', pid)[0]!.ok).toBe(1);
  for (const until = Date.now() + 10_000; storeBackends().some((pid) => pids.includes(pid));)
    if (Date.now() > until) throw new Error('the terminated store backends are still there after 10 s');
  return pids;
}

/** Both hosts have opened a new store connection (their next statement after the loss). */
async function reconnected(old: number[]) {
  await expect.poll(() => storeBackends().filter((pid) => !old.includes(pid)).length, { timeout: 20_000 }).toBe(2);
}

/** An event on each host runs to completion: both serve on. */
async function bothServe(conversation: string) {
  for (const host of [hostA!, hostB!]) {
    const r = await dispatch(host, chatEvent({ bot: 'echo', text: 'still here', conversation: { id: conversation } }));
    await expect.poll(async () => (await runOn(host, r.runId)).status, { timeout: 20_000 }).toBe('completed');
  }
  for (const host of [hostA!, hostB!]) expect(host.child.exitCode).toBeNull();
}

/** The hosts' starts that hold a lease. */
const liveHosts = () => query('SELECT host_id, epoch FROM hosts WHERE dead_at IS NULL ORDER BY host_id');

/** The run's ends in the log: exactly one is expected. */
const ends = (runId: string) =>
  query("SELECT type FROM events WHERE run_id = ? AND type IN ('run.ended', 'run.interrupted')", runId);

beforeAll(async () => {
  cluster = startPgCluster();
  env = { PADDOCK_RUNNER_DIRS: FIXTURE_RUNNERS, PADDOCK_DATABASE_URL: cluster.url, PADDOCK_LEASE_MS: String(LEASE_MS) };
  token = await applyWithPlatformToken(homeA, echoAndHeldBindings(rv.path), env);
  cpSync(join(homeA, 'keys'), join(homeB, 'keys'), { recursive: true }); // one signing key (scale-out.md §4)
  hostA = await startServe(homeA, [], env);
  hostB = await startServe(homeB, [], env);
}, 120_000);

afterAll(async () => {
  const codes = await stopHostsThen([hostA, hostB], () => {
    rv.close();
    cluster?.stop();
  });
  expect(codes).toEqual(codes.map(() => 0));
});

describe('paddock serve when its PostgreSQL connection is lost', () => {
  it('ended while idle: both hosts open a new connection and serve on', async () => {
    await bothServe('idle-before');
    const old = terminateStoreConnections();
    await reconnected(old);
    await bothServe('idle-after');
  });

  it('ended while a run is held: the run ends once, completed, and the host serves on', async () => {
    const held = await dispatch(hostA!, chatEvent({ bot: 'held', text: 'held on A', conversation: { id: 'm1' } }));
    await rv.arrived(held.runId);
    const old = terminateStoreConnections();
    rv.go(held.runId); // the run's next writes are the first statements on A's lost connection
    await expect.poll(async () => (await runOn(hostA!, held.runId)).status, { timeout: 20_000 }).toBe('completed');
    expect(ends(held.runId)).toEqual([{ type: 'run.ended' }]);
    await reconnected(old);
    await bothServe('mid-run-after');
  });

  it('a database refusing connections a moment: background work logs and retries, and both serve again', async () => {
    queryOn('postgres', 'ALTER DATABASE paddock ALLOW_CONNECTIONS false');
    try {
      terminateStoreConnections();
      // The webhook worker's timer reads the store every poll: it cannot reopen now, and says so instead of throwing.
      await Promise.all([hostA!, hostB!].map((h) => h.waitFor(/could not read the next due delivery/)));
      // The store is named (its URL is a secret to the host's redactor, so the log shows it redacted).
      expect(hostA!.stderr()).toMatch(/lost the connection to the PostgreSQL store \S+ and could not open a new one/);
      // A platform's event meanwhile: 503 store_unavailable, retry (deduplicated by id), the store's location withheld.
      const res = await fetch(`${hostA!.url}/v1/events`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(chatEvent({ bot: 'echo', text: 'while refused', conversation: { id: 'refused' } })),
      });
      const body = await res.text();
      expect([res.status, res.headers.get('retry-after')], body).toEqual([503, '1']);
      expect(JSON.parse(body)).toMatchObject({ code: 'store_unavailable' });
      expect(body).not.toMatch(/postgres|paddock-pg-/);
    } finally {
      queryOn('postgres', 'ALTER DATABASE paddock ALLOW_CONNECTIONS true');
    }
    await bothServe('refused-after');
  });

  it('a run that ends while the database refuses connections: its end is stored once it takes them again', async () => {
    const held = await dispatch(hostA!, chatEvent({ bot: 'held', text: 'ends unseen', conversation: { id: 'u1' } }));
    await rv.arrived(held.runId);
    queryOn('postgres', 'ALTER DATABASE paddock ALLOW_CONNECTIONS false');
    try {
      terminateStoreConnections();
      rv.go(held.runId); // the runner ends; the host cannot store it now (once, the run stayed running for ever)
      await hostA!.waitFor(/the store refused a record; trying again until it takes it/);
    } finally {
      queryOn('postgres', 'ALTER DATABASE paddock ALLOW_CONNECTIONS true');
    }
    await expect.poll(async () => (await runOn(hostA!, held.runId)).status, { timeout: 20_000 }).not.toBe('running');
    // Failed, saying why: what the runner streamed meanwhile could not be stored (a run whose record is incomplete
    // fails, journal.ts), but its end is stored, once, as soon as the database takes it.
    expect(await runOn(hostA!, held.runId)).toMatchObject({
      status: 'failed',
      reason: expect.stringMatching(
        /^runner completed the run; then the host failed while recording the run: .*lost the connection to/,
      ),
    });
    expect(ends(held.runId)).toEqual([{ type: 'run.ended' }]);
    // Its conversation goes on.
    const next = await dispatch(hostA!, chatEvent({ bot: 'echo', text: 'next', conversation: { id: 'u1' } }));
    await expect.poll(async () => (await runOn(hostA!, next.runId)).status, { timeout: 20_000 }).toBe('completed');
  });

  it('a database refusing connections for most of the lease: both keep their lease and serve on', async () => {
    const live = liveHosts();
    expect(live).toHaveLength(2);
    // Both hosts hold a store connection again after the case before (a host reconnects at its next statement).
    await expect.poll(() => storeBackends().length, { timeout: 20_000 }).toBe(2);
    queryOn('postgres', 'ALTER DATABASE paddock ALLOW_CONNECTIONS false');
    try {
      terminateStoreConnections();
      // The outage itself, the test's input: past a third of the lease (a renewal that failed was tried again only
      // at the next one, and an outage this long cost every host its lease: outside attack 5), within its three
      // quarters less a retry (the renewal before it may be a quarter of a lease old).
      await new Promise((resolve) => setTimeout(resolve, LEASE_MS * 0.6));
    } finally {
      queryOn('postgres', 'ALTER DATABASE paddock ALLOW_CONNECTIONS true');
    }
    await bothServe('outage-after');
    // Neither lost its lease: the same start of each, alive, and nobody took anybody over.
    expect(liveHosts()).toEqual(live);
    expect(Number(query("SELECT count(*) AS n FROM audit WHERE type = 'cluster.host_taken_over'")[0]!.n)).toBe(0);
  });

  it('a database restart shorter than the lease: both survive, a held run ends once, both serve again', async () => {
    const live = liveHosts();
    expect(live).toHaveLength(2);
    const held = await dispatch(hostB!, chatEvent({ bot: 'held', text: 'held on B', conversation: { id: 'r1' } }));
    await rv.arrived(held.runId);
    const old = storeBackends();
    cluster.restart();
    rv.go(held.runId);
    await expect.poll(async () => (await runOn(hostB!, held.runId)).status, { timeout: 20_000 }).toBe('completed');
    expect(ends(held.runId)).toEqual([{ type: 'run.ended' }]);
    await reconnected(old);
    await bothServe('restart-after');
    // Neither lost its lease: the same start of each, alive.
    expect(liveHosts()).toEqual(live);
  });

  it('a host whose lease runs out while the database is down stops with exit 1, saying so, not 2', async () => {
    const homeC = mkdtempSync(join(tmpdir(), 'paddock-pg-reconnect-c-'));
    cpSync(join(homeA, 'keys'), join(homeC, 'keys'), { recursive: true });
    // A short lease of its own: the outage outlasts it, not A's and B's (their 6 s leases survive it, case above).
    const hostC = await startServe(homeC, [], { ...env, PADDOCK_LEASE_MS: '1500' });
    await expect.poll(() => storeBackends().length, { timeout: 20_000 }).toBe(3);
    queryOn('postgres', 'ALTER DATABASE paddock ALLOW_CONNECTIONS false');
    let code: number | undefined;
    try {
      terminateStoreConnections(3);
      // It stops while the store is still out of reach: the stop reads nothing it needs from it (outside attack 5:
      // a read there threw, and the host exited 2, a usage error).
      code = (await hostC.child).exitCode;
    } finally {
      queryOn('postgres', 'ALTER DATABASE paddock ALLOW_CONNECTIONS true');
    }
    expect(code, hostC.stderr()).toBe(1);
    expect(hostC.stderr()).toMatch(/could not renew its lease for 1500 ms/);
    expect(hostC.stderr()).toMatch(/paddock serve: stopped/);
    await bothServe('after-c');
  });
});
