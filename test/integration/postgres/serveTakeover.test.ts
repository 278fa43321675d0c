// A host that dies is taken over by another, end to end (docs/scale-out.md §4, "Wired into the host"): two real
// `paddock serve` processes on one throwaway PostgreSQL cluster, each with its own data folder and a 1.5 s lease.
// Host A runs a held run with a second message of the same conversation queued behind it, and is SIGKILLed. Host B,
// on its lease tick, interrupts A's run exactly once and adopts the queued one, which then runs on B to completion.
// A started again on its folder finds its old start taken over and serves on. A host whose lease is taken over
// while it runs stops, with its run ended once and its runner gone — also when it holds queued runs of two
// conversations, which the host that took it over runs (a paused host: it once stayed up for ever, unstoppable), and
// whose runners end while it is still paused, once its lease passed unrenewed.
// A queued run the survivor adopts starts before the runs the survivor queued behind it in the same conversation.
import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyWithPlatformToken, paddock } from '../../helpers/cli.js';
import { chatEvent, FIXTURE_RUNNERS } from '../../helpers/host.js';
import { queryPg, startPgCluster, type PgCluster } from '../../helpers/pgCluster.js';
import { rendezvous } from '../../helpers/rendezvous.js';
import { startServe, stopHostsThen, type ServeChild } from '../../helpers/serve.js';
import { dispatchTo, runFrom } from '../../helpers/serveApi.js';
import { storeProcess } from '../../helpers/storeProcess.js';
import { processStartTime } from '../../../host/util/procIdentity.js';

const homeA = mkdtempSync(join(tmpdir(), 'paddock-pg-takeover-a-'));
const homeB = mkdtempSync(join(tmpdir(), 'paddock-pg-takeover-b-'));
const homeC = mkdtempSync(join(tmpdir(), 'paddock-pg-takeover-c-'));
const homeD = mkdtempSync(join(tmpdir(), 'paddock-pg-takeover-d-'));
const homeE = mkdtempSync(join(tmpdir(), 'paddock-pg-takeover-e-'));
const rv = rendezvous(homeA);
let cluster: PgCluster;
let env: Record<string, string>;
let hostA: ServeChild | undefined;
let hostB: ServeChild | undefined;
let hostC: ServeChild | undefined;
let hostD: ServeChild | undefined;
let hostE: ServeChild | undefined;
let token = '';
const LEASE_MS = 1_500;

const dispatch = (host: ServeChild, event: unknown) => dispatchTo(host, token, event);

const runOn = (host: ServeChild, runId: string) => runFrom(host, token, runId);

/** The first file called `name` under `dir`, or undefined. */
function findFile(dir: string, name: string): string | undefined {
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true }))
    if (entry.isFile() && entry.name === name) return join(entry.parentPath, entry.name);
  return undefined;
}

/** One query on the shared database, as its owner. */
const query = (sql: string, ...params: unknown[]) => queryPg(cluster.url, sql, ...params);

beforeAll(async () => {
  cluster = startPgCluster();
  env = { PADDOCK_RUNNER_DIRS: FIXTURE_RUNNERS, PADDOCK_DATABASE_URL: cluster.url, PADDOCK_LEASE_MS: String(LEASE_MS) };
  const waits = `runner: waits-for-go, sandbox: process, config: { socket: ${JSON.stringify(rv.path)} }`;
  token = await applyWithPlatformToken(
    homeA,
    `bindings:\n  - { id: held, ${waits}, route: { platform: telegram } }\n` +
      '  - { id: flood, runner: writes-files, sandbox: process, grants: { fs: readwrite }, ' +
      'route: { platform: slack, bot: flood } }\n',
    env,
  );
  hostA = await startServe(homeA, [], env);
  hostB = await startServe(homeB, [], env);
}, 120_000);

afterAll(async () => {
  // A host a failed case left running is ended (a zombie host ignores SIGTERM); the case has failed already.
  hostC?.child.kill('SIGKILL');
  hostD?.child.kill('SIGKILL');
  hostE?.child.kill('SIGKILL');
  const codes = await stopHostsThen([hostA, hostB], () => {
    rv.close();
    cluster?.stop();
  });
  expect(codes).toEqual(codes.map(() => 0));
});

describe('a dead host taken over by another (PostgreSQL)', () => {
  it('interrupts its running run once, runs its queued one on the survivor, and lets it come back', async () => {
    const hostIdA = readFileSync(join(homeA, 'host-id'), 'utf8').trim();
    const hostIdB = readFileSync(join(homeB, 'host-id'), 'utf8').trim();
    const first = await dispatch(hostA!, chatEvent({ text: 'one', conversation: { id: 't1' } }));
    await rv.arrived(first.runId); // running on A
    const second = await dispatch(hostA!, chatEvent({ text: 'two', conversation: { id: 't1' } }));
    expect(second.status).toBe('queued'); // behind the first, in A's memory only

    hostA!.child.kill('SIGKILL'); // the host process alone: its runner spawner ends its runs (SP3)
    await hostA!.child;
    hostA = undefined;

    // B's lease tick finds A's lease run out: A's run is interrupted, naming A; the queued one starts on B.
    await expect.poll(async () => (await runOn(hostB!, first.runId)).status, { timeout: 20_000 }).toBe('interrupted');
    expect((await runOn(hostB!, first.runId)).reason).toMatch(new RegExp(`host ${hostIdA} \\(epoch 1\\) stopped`));
    await rv.arrived(second.runId);

    // A comes back on its folder while the conversation runs on B: a new start (epoch 2), nothing of its old one left
    // to recover. The session folder quota A's run left mounted is unmounted although the session is live (on B):
    // once kept, every later run of it on A failed ("already mounted").
    hostA = await startServe(homeA, [], env);
    expect(hostA.stderr()).not.toMatch(/recovery: run/);
    const sessionMount = join(homeA, 'sessions', first.sessionId);
    expect(readFileSync('/proc/self/mountinfo', 'utf8')).not.toContain(` ${sessionMount} `);
    rv.go(second.runId);
    await expect.poll(async () => (await runOn(hostB!, second.runId)).status, { timeout: 20_000 }).toBe('completed');

    const events = (runId: string, type: string) =>
      query('SELECT count(*) AS n FROM events WHERE run_id = ? AND type = ?', runId, type)[0]!.n;
    expect(Number(events(first.runId, 'run.interrupted'))).toBe(1);
    expect(Number(events(first.runId, 'run.ended'))).toBe(0);
    expect(Number(events(second.runId, 'run.started'))).toBe(1);
    expect(query('SELECT owner_host FROM runs WHERE id = ?', second.runId)[0]!.owner_host).toBe(hostIdB);
    expect(query('SELECT taken_over_by FROM hosts WHERE host_id = ? AND epoch = 1', hostIdA)[0]).toEqual({
      taken_over_by: `${hostIdB}/1`,
    });

    // A serves the conversation on.
    const third = await dispatch(hostA, chatEvent({ text: 'three', conversation: { id: 't1' } }));
    await rv.arrived(third.runId);
    rv.go(third.runId);
    await expect.poll(async () => (await runOn(hostA!, third.runId)).status, { timeout: 20_000 }).toBe('completed');
    expect(query('SELECT owner_host, owner_epoch FROM runs WHERE id = ?', third.runId)[0]).toEqual({
      owner_host: hostIdA,
      owner_epoch: 2,
    });
    // Each host signs with its own key; from A's (the first to sign), B's key is learnt from the record B wrote.
    const verified = await paddock(['audit', 'verify', '--json'], { dataDir: homeA, env });
    expect(verified.exitCode, verified.stderr).toBe(0);
    // From a folder whose host never signed (no key of its own): refused, saying how, not an internal error.
    const keyless = await paddock(['audit', 'verify'], {
      dataDir: mkdtempSync(join(tmpdir(), 'paddock-keyless-')),
      env,
    });
    expect([keyless.exitCode, keyless.stderr]).toEqual([
      2,
      expect.stringMatching(/^paddock: no audit public key at .*--key/),
    ]);
  });

  it('a host whose lease is taken over stops: its run ends once, its runner is gone, serve exits 1', async () => {
    const hostIdB = readFileSync(join(homeB, 'host-id'), 'utf8').trim();
    const held = await dispatch(hostB!, chatEvent({ text: 'held on B', conversation: { id: 't2' } }));
    await rv.arrived(held.runId);
    const runner = query("SELECT data FROM events WHERE run_id = ? AND type = 'run.started'", held.runId)[0]!;
    const runnerPid = (JSON.parse(String(runner.data)) as { pid: number }).pid;
    // As if B had paused past its lease and another host took it over: its lease runs out, a third host takes it over.
    query('UPDATE hosts SET lease_until = 0 WHERE host_id = ? AND dead_at IS NULL RETURNING host_id', hostIdB);
    const taker = await storeProcess('takesOverDeadHosts.ts', [
      mkdtempSync(join(tmpdir(), 'paddock-taker-')),
      cluster.url,
      'c',
    ]);
    taker.go();
    await taker.done;
    const exit = await hostB!.child;
    hostB = undefined;
    expect(exit.exitCode).toBe(1);
    expect(exit.stderr).toMatch(/lost its lease: it ran out or another host took it over/);
    // Ended once: interrupted by the taker, or cancelled by B itself if B heard first (its lease ran out either way).
    const ends = query(
      "SELECT type FROM events WHERE run_id = ? AND type IN ('run.ended', 'run.interrupted')",
      held.runId,
    );
    expect(ends).toHaveLength(1);
    expect(processStartTime(runnerPid)).toBeNull();
  });

  it('a paused host taken over with queued runs in two conversations exits 1, and no run ends twice', async () => {
    hostC = await startServe(homeC, [], env);
    const hostIdC = readFileSync(join(homeC, 'host-id'), 'utf8').trim();
    const held: string[] = [];
    const queued: string[] = [];
    for (const id of ['t3', 't4']) {
      const run = await dispatch(hostC, chatEvent({ text: `held ${id}`, conversation: { id } }));
      await rv.arrived(run.runId);
      held.push(run.runId);
    }
    for (const id of ['t3', 't4']) {
      const run = await dispatch(hostC, chatEvent({ text: `queued ${id}`, conversation: { id } }));
      expect(run.status).toBe('queued');
      queued.push(run.runId);
    }
    const runnerPids = held.map((runId) => {
      const started = query("SELECT data FROM events WHERE run_id = ? AND type = 'run.started'", runId)[0]!;
      return (JSON.parse(String(started.data)) as { pid: number }).pid;
    });
    // C pauses past its lease; A, the live host, takes it over meanwhile: C's running runs are interrupted, its queued
    // ones become A's (they start there). Only then does C go on, and find its lease lost.
    hostC.child.kill('SIGSTOP');
    query('UPDATE hosts SET lease_until = 0 WHERE host_id = ? AND dead_at IS NULL RETURNING host_id', hostIdC);
    const takenOver = () => query('SELECT taken_over_by FROM hosts WHERE host_id = ?', hostIdC)[0]!.taken_over_by;
    await expect.poll(takenOver, { timeout: 20_000 }).not.toBeNull();
    for (const runId of queued) await rv.arrived(runId); // adopted and started by A
    // C's runners are gone while C is still stopped: its runner spawner ended them once the lease C last told it of
    // passed unrenewed (outside attack F4: they ran on, beside A's runs of their conversations, until C resumed).
    for (const pid of runnerPids) await expect.poll(() => processStartTime(pid), { timeout: 10_000 }).toBeNull();
    expect(hostC.child.exitCode).toBeNull();
    hostC.child.kill('SIGCONT');

    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      hostC.child,
      new Promise<'still running'>((resolve) => (timer = setTimeout(() => resolve('still running'), 20_000))),
    ]);
    clearTimeout(timer);
    const said = hostC
      .stderr()
      .split('\n')
      .filter((line) => !line.startsWith('{'));
    expect(outcome === 'still running' ? outcome : outcome.exitCode, said.join('\n')).toBe(1);
    hostC = undefined;

    for (const runId of queued) rv.go(runId);
    for (const runId of queued)
      await expect.poll(async () => (await runOn(hostA!, runId)).status, { timeout: 20_000 }).toBe('completed');
    // Every run ended once: the held ones interrupted by the takeover (C's own cancels refused), the queued ones on A.
    for (const runId of [...held, ...queued]) {
      const ends = query(
        "SELECT type FROM events WHERE run_id = ? AND type IN ('run.ended', 'run.interrupted')",
        runId,
      );
      expect(ends, runId).toEqual([{ type: held.includes(runId) ? 'run.interrupted' : 'run.ended' }]);
    }
    for (const pid of runnerPids) expect(processStartTime(pid)).toBeNull();
  });

  it('a host resumed after its run was taken over carries out none of the requests its runner left', async () => {
    hostD = await startServe(homeD, [], env);
    const hostIdD = readFileSync(join(homeD, 'host-id'), 'utf8').trim();
    // Its runner appends to a workspace file through the host, 30 requests in flight, until it is killed.
    const plan = { appendForever: { path: 'flood.log', inFlight: 30 } };
    const run = await dispatch(hostD, chatEvent({ platform: 'slack', bot: 'flood', text: JSON.stringify(plan) }));
    const file = () => findFile(homeD, 'flood.log');
    const size = () => {
      const path = file();
      return path ? statSync(path).size : 0;
    };
    await expect.poll(size, { timeout: 20_000 }).toBeGreaterThan(1_000);
    const started = query("SELECT data FROM events WHERE run_id = ? AND type = 'run.started'", run.runId)[0]!;
    const runnerPid = (JSON.parse(String(started.data)) as { pid: number }).pid;
    // D pauses; its lease runs out and A takes it over; its runner spawner kills the runner meanwhile. The runner's
    // last requests wait in its pipe for D.
    hostD.child.kill('SIGSTOP');
    query('UPDATE hosts SET lease_until = 0 WHERE host_id = ? AND dead_at IS NULL RETURNING host_id', hostIdD);
    const takenOver = () => query('SELECT taken_over_by FROM hosts WHERE host_id = ?', hostIdD)[0]!.taken_over_by;
    await expect.poll(takenOver, { timeout: 20_000 }).not.toBeNull();
    await expect.poll(() => processStartTime(runnerPid), { timeout: 10_000 }).toBeNull();
    const path = file()!;
    const before = statSync(path).size;
    // D goes on: its lease is lost. Until it exits, the file is watched: no write of the run it no longer owns lands
    // (outside attack 5, F2: the waiting requests were carried out, 3 to 7 appends after the resume).
    hostD.child.kill('SIGCONT');
    let largest = before;
    const watch = setInterval(() => {
      try {
        largest = Math.max(largest, statSync(path).size);
      } catch {
        // gone with its mount at D's exit
      }
    }, 2);
    const { exitCode } = await hostD.child;
    clearInterval(watch);
    hostD = undefined;
    expect(exitCode).toBe(1);
    expect(largest - before).toBe(0);
    expect(
      query("SELECT type FROM events WHERE run_id = ? AND type IN ('run.ended', 'run.interrupted')", run.runId),
    ).toEqual([{ type: 'run.interrupted' }]);
  });

  it("a dead host's queued run adopted behind a later one of the taker's starts first (session order)", async () => {
    hostB ??= await startServe(homeB, [], env); // stopped by the second case, when it ran
    const first = await dispatch(hostA!, chatEvent({ text: 'five', conversation: { id: 't5' } }));
    await rv.arrived(first.runId);
    const second = await dispatch(hostA!, chatEvent({ text: 'six', conversation: { id: 't5' } }));
    expect(second.status).toBe('queued');
    hostA!.child.kill('SIGKILL');
    await hostA!.child;
    hostA = undefined;
    // Posted to B while A's lease still holds: B queues it behind A's two, then takes A over and adopts `second`,
    // which was queued before it. The store lets only a session's earliest waiting run start.
    const third = await dispatch(hostB, chatEvent({ text: 'seven', conversation: { id: 't5' } }));
    expect(third.status).toBe('queued');
    await rv.arrived(second.runId); // adopted by B and started there: it once waited behind `third` for ever
    rv.go(second.runId);
    await rv.arrived(third.runId);
    rv.go(third.runId);
    await expect.poll(async () => (await runOn(hostB!, third.runId)).status, { timeout: 20_000 }).toBe('completed');
    expect((await runOn(hostB!, second.runId)).status).toBe('completed');
    // The case holds only if B queued `third` before the takeover (whose interruption of `first` re-owned `second`).
    const seqOf = (runId: string, type: string) =>
      Number(query('SELECT seq FROM events WHERE run_id = ? AND type = ?', runId, type)[0]!.seq);
    expect(seqOf(third.runId, 'run.queued')).toBeLessThan(seqOf(first.runId, 'run.interrupted'));
  });

  it('a run cancelled while its host is dead and it waits is not run by the host taking it over', async () => {
    hostB ??= await startServe(homeB, [], env);
    hostE = await startServe(homeE, [], env);
    const first = await dispatch(hostE, chatEvent({ text: 'eight', conversation: { id: 't8' } }));
    await rv.arrived(first.runId);
    const second = await dispatch(hostE, chatEvent({ text: 'nine', conversation: { id: 't8' } }));
    expect(second.status).toBe('queued');
    hostE.child.kill('SIGKILL');
    await hostE.child;
    hostE = undefined;
    // Asked of B while E's lease still holds: no live host holds the run, and B's watcher passes the request by.
    const asked = await fetch(`${hostB.url}/v1/runs/${second.runId}/cancel`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ reason: 'no longer wanted' }),
    });
    expect(asked.status).toBe(202);
    // B takes E over and re-owns the queued run: it reads the request then, and ends the run cancelled, never started.
    await expect.poll(async () => (await runOn(hostB!, second.runId)).status, { timeout: 20_000 }).toBe('cancelled');
    expect((await runOn(hostB!, second.runId)).reason).toContain('no longer wanted');
    expect((await runOn(hostB!, first.runId)).status).toBe('interrupted');
    expect(query("SELECT type FROM events WHERE run_id = ? AND type = 'run.started'", second.runId)).toEqual([]);
    expect(rv.has(second.runId)).toBe(false);
  });
});
