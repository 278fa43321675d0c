// `paddock serve` on PostgreSQL end to end (docs/scale-out.md, "What is built"): the real commands as child processes
// with PADDOCK_DATABASE_URL pointing at a throwaway cluster — `apply`, `tokens create`, two `paddock serve` processes,
// each with its own data folder and its own audit key (B's made before it joins) — real runner processes, a real HTTP
// and SSE client. Host A runs a dispatched run and streams it; host B, idle, streams the same session and sees A's run
// live (only A's notifications can tell it: B commits nothing); the audit both signed verifies on PostgreSQL.
import { createPublicKey } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyWithPlatformToken, echoAndHeldBindings, paddock } from '../../helpers/cli.js';
import { chatEvent, FIXTURE_RUNNERS } from '../../helpers/host.js';
import { startPgCluster, type PgCluster } from '../../helpers/pgCluster.js';
import { rendezvous } from '../../helpers/rendezvous.js';
import { startServe, stopHostsThen, type ServeChild } from '../../helpers/serve.js';
import { dispatchTo } from '../../helpers/serveApi.js';
import { openSse } from '../../helpers/sse.js';
import { PgDb } from '../../../host/state/pg/pgDb.js';
import { auditKeyPaths, keyIdOf } from '../../../host/audit/auditKey.js';

const homeA = mkdtempSync(join(tmpdir(), 'paddock-pg-host-a-'));
const homeB = mkdtempSync(join(tmpdir(), 'paddock-pg-host-b-'));
const rv = rendezvous(homeA);
let cluster: PgCluster;
let env: Record<string, string>;
let hostEnv: Record<string, string>;

/** docs/admin-guide.md, "PostgreSQL": the hosts' role (a password in a real deployment; trust auth here). */
const LEAST_PRIVILEGE_GRANTS = `
  CREATE ROLE paddock_host LOGIN;
  GRANT USAGE ON SCHEMA public TO paddock_host;
  GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO paddock_host;
  REVOKE UPDATE, DELETE, TRUNCATE ON events, audit, config_changes FROM paddock_host;
  GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO paddock_host;`;
let hostA: ServeChild | undefined;
let hostB: ServeChild | undefined;
let token = '';

const dispatch = (host: ServeChild, event: unknown) => dispatchTo(host, token, event);

beforeAll(async () => {
  cluster = startPgCluster();
  env = { PADDOCK_RUNNER_DIRS: FIXTURE_RUNNERS, PADDOCK_DATABASE_URL: cluster.url };
  token = await applyWithPlatformToken(homeA, echoAndHeldBindings(rv.path), env);
  // The commands above ran as the schema's owner (and migrated it); the hosts run as the admin guide's
  // least-privilege role ("PostgreSQL"), exactly as granted there.
  // B's folder made its key earlier, on a store of its own: it joins with that key (no copy of A's).
  const own = await paddock(['runs', 'list'], { dataDir: homeB, env: { PADDOCK_RUNNER_DIRS: FIXTURE_RUNNERS } });
  expect(own.exitCode, own.stderr).toBe(0);
  const owner = new PgDb(cluster.url);
  owner.exec(LEAST_PRIVILEGE_GRANTS);
  owner.close();
  hostEnv = { ...env, PADDOCK_DATABASE_URL: cluster.url.replace('user=postgres', 'user=paddock_host') };
  hostA = await startServe(homeA, [], hostEnv);
  hostB = await startServe(homeB, [], hostEnv);
}, 120_000);

afterAll(async () => {
  const codes = await stopHostsThen([hostA, hostB], () => {
    rv.close();
    cluster?.stop();
  });
  expect(codes).toEqual(codes.map(() => 0));
});

describe('paddock serve on PostgreSQL', () => {
  it('runs a dispatched run (echo) and streams it over SSE; the other host reads the same run', async () => {
    const r = await dispatch(hostA!, chatEvent({ bot: 'echo', text: 'hello postgres', conversation: { id: 'e1' } }));
    const auth = { authorization: `Bearer ${token}` };
    const stream = await openSse(`${hostA!.url}${r.links.runEvents}`, { headers: auth });
    expect(stream.status).toBe(200);
    expect(await stream.closed).toBe('end');
    const types = stream.messages.map((m) => m.event);
    expect(types[0]).toBe('run.queued');
    expect(types).toContain('run.update');
    expect(types.at(-1)).toBe('run.ended');
    expect(JSON.parse(stream.messages.at(-1)!.data)).toMatchObject({ data: { status: 'completed' } });
    // The store is one: host B answers for the run host A ran.
    const onB = await fetch(`${hostB!.url}/v1/runs/${r.runId}`, { headers: auth });
    expect(onB.status).toBe(200);
    expect(await onB.json()).toMatchObject({ id: r.runId, status: 'completed' });
  });

  it("an idle second host streams the session live and sees the first host's run, gap-free", async () => {
    const auth = { authorization: `Bearer ${token}` };
    const r = await dispatch(hostA!, chatEvent({ bot: 'held', text: 'held on A', conversation: { id: 'x1' } }));
    await rv.arrived(r.runId); // running on host A
    let sawEnd = () => undefined as void;
    const ended = new Promise<void>((resolve) => (sawEnd = resolve));
    const onB = await openSse(`${hostB!.url}${r.links.sessionEvents}`, {
      headers: auth,
      onMessage: (m) => void (m.event === 'run.ended' && sawEnd()),
    });
    expect(onB.status).toBe(200);
    rv.go(r.runId); // host A ends the run now: host B hears of it only through A's notifications
    await ended;
    onB.destroy();
    const seqs = onB.messages.map((m) => Number(m.id));
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
    const mine = onB.messages.filter((m) => (JSON.parse(m.data) as { runId?: string }).runId === r.runId);
    expect(mine.map((m) => m.event)).toEqual(expect.arrayContaining(['run.queued', 'run.started', 'run.ended']));
  });

  it('paddock audit verify checks the one chain both hosts wrote, on PostgreSQL; B brought its own key', async () => {
    // From A's key, the root (A's commands signed the chain at their closes; B, serving, may not have signed yet): B's
    // key is learnt from the record B wrote when it joined (docs/scale-out.md §4), trusted or not yet.
    const verified = await paddock(['audit', 'verify', '--json'], { dataDir: homeA, env: hostEnv });
    expect(verified.exitCode, verified.stderr).toBe(0);
    const verdict = JSON.parse(verified.stdout) as { ok: boolean; keys: { keyId: string; introducedAt: number }[] };
    expect(verdict.ok).toBe(true);
    const keyB = keyIdOf(createPublicKey(readFileSync(auditKeyPaths(homeB).publicPath)));
    expect(verdict.keys.find((k) => k.keyId === keyB)?.introducedAt).toBeGreaterThan(1);
  });

  it("paddock doctor names the PostgreSQL store, reachable and migrated to this host's version", async () => {
    const doctor = await paddock(['doctor', '--json'], { dataDir: homeB, env: hostEnv });
    expect(doctor.exitCode, doctor.stderr).toBe(0);
    const { state } = JSON.parse(doctor.stdout) as { state: Record<string, unknown> };
    expect(state).toMatchObject({ store: 'postgres', ok: true });
    expect(state.detail).toBe(`reachable, schema version ${String(state.hostVersion)}`);
    expect(state.where).toBe(`PostgreSQL ${hostEnv.PADDOCK_DATABASE_URL}`);
  });

  it("the hosts' role cannot change what is append-only: a refused privilege, before any trigger", () => {
    const asHost = new PgDb(hostEnv.PADDOCK_DATABASE_URL!);
    try {
      for (const sql of ['UPDATE events SET type = type', 'DELETE FROM audit', 'TRUNCATE config_changes']) {
        let code: string | undefined;
        try {
          asHost.exec(sql);
        } catch (error) {
          code = (error as { code?: string }).code;
        }
        expect(code, sql).toBe('PG_42501'); // insufficient_privilege
      }
    } finally {
      asHost.close();
    }
  });

  it("the URL's password is a secret the host redacts: a run that prints it stores and shows [REDACTED]", async () => {
    // Trust authentication ignores the password: the URL works, and the host must still treat it as a secret.
    const password = 'Run-0utput-pa55word';
    const url = `${hostEnv.PADDOCK_DATABASE_URL}&password=${password}`;
    const run = await paddock(['run', '--runner', 'echo', '--text', `leak ${password} now`, '--json'], {
      dataDir: homeB,
      env: { ...hostEnv, PADDOCK_DATABASE_URL: url },
    });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stdout).toContain('[REDACTED]');
    expect(`${run.stdout}${run.stderr}`).not.toContain(password);
    const exported = await paddock(['audit', 'export'], { dataDir: homeB, env: hostEnv });
    expect(exported.exitCode, exported.stderr).toBe(0);
    expect(exported.stdout).not.toContain(password);
  });

  it('a URL with a password is never shown: doctor on an unreachable one, and a malformed one', async () => {
    const password = 'Sup3r-s3cret-pa55word';
    const unreachable = `postgresql://paddock:${password}@127.0.0.1:9/paddock?connect_timeout=5`;
    const doctor = await paddock(['doctor'], { dataDir: homeB, env: { PADDOCK_DATABASE_URL: unreachable } });
    expect(doctor.exitCode, doctor.stderr).toBe(0);
    const shown = 'postgresql://paddock:***@127.0.0.1:9/paddock?connect_timeout=5';
    expect(doctor.stdout).toMatch(/^state store: +NO +PostgreSQL \S+ — unreachable: /m);
    expect(doctor.stdout).toContain(`PostgreSQL ${shown} — unreachable: `);
    const malformed = await paddock(['runs', 'list'], {
      dataDir: homeB,
      env: { PADDOCK_DATABASE_URL: `mysql://paddock:${password}@db/paddock` },
    });
    expect(malformed.exitCode).toBe(2);
    expect(malformed.stderr).toContain('PADDOCK_DATABASE_URL is not a PostgreSQL URL: its scheme is mysql:');
    const onCommandLine = await paddock(['runs', 'list', '--database-url', unreachable], { dataDir: homeB, env });
    expect(onCommandLine.exitCode).toBe(2);
    expect(onCommandLine.stderr).toContain('--database-url holds a password');
    for (const r of [doctor, malformed, onCommandLine]) expect(`${r.stdout}${r.stderr}`).not.toContain(password);
  });
});
