// A data folder copied to another machine (outside attack F1; docs/scale-out.md §4, "Judged by the lease"): its host
// id comes with it, so a host started on the copy used to judge the original's runs as its own by pid, see no such
// process on its machine, and interrupt a run the original was running. Another machine is a new pid namespace here
// (`unshare --pid --mount-proc`): the original's processes are invisible from it, as from another machine. The copy's
// start must leave the live run alone (it is judged by the original's lease), and the run ends on the original.
import { cpSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyWithPlatformToken, echoAndHeldBindings } from '../../helpers/cli.js';
import { chatEvent, FIXTURE_RUNNERS } from '../../helpers/host.js';
import { queryPg, startPgCluster, type PgCluster } from '../../helpers/pgCluster.js';
import { rendezvous } from '../../helpers/rendezvous.js';
import { startServe, stopHostsThen, type ServeChild } from '../../helpers/serve.js';
import { dispatchTo, runFrom } from '../../helpers/serveApi.js';

const original = mkdtempSync(join(tmpdir(), 'paddock-pg-copied-a-'));
const copy = mkdtempSync(join(tmpdir(), 'paddock-pg-copied-b-'));
const rv = rendezvous(original);
let cluster: PgCluster;
let env: Record<string, string>;
let hostA: ServeChild | undefined;
let hostB: ServeChild | undefined;
let token = '';
const LEASE_MS = 3_000;

/** Another machine, as far as pids go: a pid namespace of its own, with its own /proc. */
const ANOTHER_MACHINE = ['unshare', '--pid', '--fork', '--mount-proc'];

beforeAll(async () => {
  cluster = startPgCluster();
  env = { PADDOCK_RUNNER_DIRS: FIXTURE_RUNNERS, PADDOCK_DATABASE_URL: cluster.url, PADDOCK_LEASE_MS: String(LEASE_MS) };
  token = await applyWithPlatformToken(original, echoAndHeldBindings(rv.path), env);
  hostA = await startServe(original, [], env);
}, 120_000);

afterAll(async () => {
  const codes = await stopHostsThen([hostB, hostA], () => {
    rv.close();
    cluster?.stop();
  });
  expect(codes).toEqual(codes.map(() => 0));
});

describe('a data folder copied to another machine (PostgreSQL)', () => {
  it("a host started on the copy leaves the original's live run alone; it ends once, on the original", async () => {
    const held = await dispatchTo(hostA!, token, chatEvent({ bot: 'held', text: 'held', conversation: { id: 'c1' } }));
    await rv.arrived(held.runId);

    // The copy: the folder's identity (host id) and signing key, as a copy of the whole folder carries them.
    for (const name of ['host-id', 'keys']) cpSync(join(original, name), join(copy, name), { recursive: true });
    const hostId = readFileSync(join(original, 'host-id'), 'utf8').trim();
    hostB = await startServe(copy, [], env, { wrap: ANOTHER_MACHINE });

    // The copy's start (epoch 2 of the same host id) ran its recovery before listening, and its lease ticks go on:
    // the original's run is still running, with no end of any kind, and the original's start is not taken over.
    expect(hostB.stderr()).not.toMatch(/recovery: run/);
    const starts = queryPg(
      cluster.url,
      'SELECT epoch, dead_at, pid_scope FROM hosts WHERE host_id = ? ORDER BY epoch',
      hostId,
    );
    expect(starts.map((s) => [s.epoch, s.dead_at])).toEqual([
      [1, null],
      [2, null],
    ]);
    expect(starts[0]!.pid_scope).not.toBe(starts[1]!.pid_scope); // two scopes: why the copy judged by the lease
    // The copy serves on meanwhile.
    const echo = await dispatchTo(
      hostB,
      token,
      chatEvent({ bot: 'echo', text: 'on the copy', conversation: { id: 'c2' } }),
    );
    await expect
      .poll(async () => (await runFrom(hostB!, token, echo.runId)).status, { timeout: 20_000 })
      .toBe('completed');
    expect((await runFrom(hostA!, token, held.runId)).status).toBe('running');

    rv.go(held.runId);
    await expect
      .poll(async () => (await runFrom(hostA!, token, held.runId)).status, { timeout: 20_000 })
      .toBe('completed');
    const ends = queryPg(
      cluster.url,
      "SELECT type FROM events WHERE run_id = ? AND type IN ('run.ended', 'run.interrupted')",
      held.runId,
    );
    expect(ends).toEqual([{ type: 'run.ended' }]);
  });
});
