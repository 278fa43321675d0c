// Balancing across `paddock serve` hosts on one PostgreSQL (docs/scale-out.md §4, "Balancing"; decision CL15): a run
// queued on a host whose slots are all taken is taken on, on its lease tick, by a live host with free slots that can
// run its binding, and runs there; the host that queued it hands it over. Real hosts, real database.
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DISPATCH_DEFAULTS } from '../../../host/config/hostConfig.js';
import { applyWithPlatformToken, paddock } from '../../helpers/cli.js';
import { chatEvent, FIXTURE_RUNNERS } from '../../helpers/host.js';
import { queryPg, startPgCluster, type PgCluster } from '../../helpers/pgCluster.js';
import { rendezvous } from '../../helpers/rendezvous.js';
import { startServe, stopHostsThen, type ServeChild } from '../../helpers/serve.js';
import { dispatchTo, runFrom } from '../../helpers/serveApi.js';

const homeA = mkdtempSync(join(tmpdir(), 'paddock-pg-balance-a-'));
const homeB = mkdtempSync(join(tmpdir(), 'paddock-pg-balance-b-'));
const homeC = mkdtempSync(join(tmpdir(), 'paddock-pg-balance-c-'));
const homeD = mkdtempSync(join(tmpdir(), 'paddock-pg-balance-d-'));
const rv = rendezvous(homeA);
const LEASE_MS = 2_000;
/** Every slot of a host (the host-wide `maxConcurrentRuns`, default). */
const SLOTS = DISPATCH_DEFAULTS.maxConcurrentRuns;
let cluster: PgCluster;
let env: Record<string, string>;
let hostA: ServeChild | undefined;
let hostB: ServeChild | undefined;
let hostC: ServeChild | undefined;
let token = '';

const query = (sql: string, ...params: unknown[]) => queryPg(cluster.url, sql, ...params);
const hostIdOf = (home: string) => readFileSync(join(home, 'host-id'), 'utf8').trim();
const ownerOf = (runId: string) => query('SELECT owner_host FROM runs WHERE id = ?', runId)[0]!.owner_host;
const statusOn = async (host: ServeChild, runId: string) => (await runFrom(host, token, runId)).status;

/** Fill every slot of host A with a held run (each in a conversation of its own); their run ids. */
async function fillA(tag: string): Promise<string[]> {
  const held: string[] = [];
  for (let i = 0; i < SLOTS; i += 1) {
    const event = chatEvent({ bot: 'held', text: 'hold', conversation: { id: `${tag}-held-${i}` } });
    const run = await dispatchTo(hostA!, token, event);
    await rv.arrived(run.runId);
    held.push(run.runId);
  }
  return held;
}

/** Post one event of `bot` in `conversation` to host A, whose slots are full: it waits there. */
async function queueOnA(bot: string, text: string, conversation: string) {
  const queued = await dispatchTo(hostA!, token, chatEvent({ bot, text, conversation: { id: conversation } }));
  expect(queued.status).toBe('queued');
  return queued;
}

/** Release held runs and wait until A shows them completed. */
async function release(runIds: string[]): Promise<void> {
  for (const runId of runIds) rv.go(runId);
  for (const runId of runIds) await expect.poll(() => statusOn(hostA!, runId), { timeout: 20_000 }).toBe('completed');
}

beforeAll(async () => {
  cluster = startPgCluster();
  env = {
    PADDOCK_RUNNER_DIRS: FIXTURE_RUNNERS,
    PADDOCK_DATABASE_URL: cluster.url,
    PADDOCK_LEASE_MS: String(LEASE_MS),
    PADDOCK_LOG_LEVEL: 'info', // a hand-over is logged at info
  };
  // `held` may run more at once than one host's slots: a run of it waits for A's slots, not for its binding's.
  const waits = `runner: waits-for-go, sandbox: process, config: { socket: ${JSON.stringify(rv.path)} }`;
  token = await applyWithPlatformToken(
    homeA,
    'bindings:\n' +
      '  - { id: echo, runner: echo, sandbox: process, route: { platform: telegram, bot: echo } }\n' +
      '  - { id: oai, runner: echo, sandbox: process, route: { platform: openai, bot: oai } }\n' +
      `  - { id: held, ${waits}, limits: { maxConcurrentRuns: ${2 * SLOTS} }, ` +
      'route: { platform: telegram, bot: held } }\n',
    env,
  );
  hostA = await startServe(homeA, [], env);
  hostB = await startServe(homeB, [], env);
}, 120_000);

afterAll(async () => {
  const codes = await stopHostsThen([hostC, hostB, hostA], () => {
    rv.close();
    cluster?.stop();
  });
  expect(codes).toEqual(codes.map(() => 0));
});

describe('balancing queued runs across hosts (PostgreSQL)', () => {
  it('a run queued on a host with no free slot runs on a host with free slots; its first host lets it go', async () => {
    const held = await fillA('one');
    const queued = await queueOnA('echo', 'move me', 'm1');
    // It ends while every run holding A's slots still runs: B ran it.
    await expect.poll(() => statusOn(hostA!, queued.runId), { timeout: 20_000 }).toBe('completed');
    expect(held.every((runId) => rv.has(runId))).toBe(true);
    expect(ownerOf(queued.runId)).toBe(hostIdOf(homeB));
    const moves = query("SELECT data FROM audit WHERE type = 'cluster.runs_moved'").map(
      (row) =>
        JSON.parse(String(row.data)) as { to: { hostId: string }; runs: { runId: string; from: { hostId: string } }[] },
    );
    expect(moves).toEqual([
      expect.objectContaining({
        to: expect.objectContaining({ hostId: hostIdOf(homeB) }),
        runs: [
          expect.objectContaining({ runId: queued.runId, from: expect.objectContaining({ hostId: hostIdOf(homeA) }) }),
        ],
      }),
    ]);
    // The run started once, and ended once.
    const ends = query(
      "SELECT type FROM events WHERE run_id = ? AND type IN ('run.started', 'run.ended', 'run.interrupted') " +
        'ORDER BY seq',
      queued.runId,
    );
    expect(ends.map((row) => row.type)).toEqual(['run.started', 'run.ended']);
    // A tries its waiting run once a slot frees, finds it B's, and lets it go (it would fail it otherwise).
    await release(held);
    await hostA!.waitFor(/moved to a host with free slots/);
    expect(hostA!.stderr()).not.toContain('could not claim a waiting run');
  });

  it('a chat completion posted to a host with no free slot is answered from the host its run moved to', async () => {
    const held = await fillA('oai');
    const asked = fetch(`${hostA!.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'oai', messages: [{ role: 'user', content: 'echo me' }] }),
    });
    const answer = await asked;
    // Answered while every run holding A's slots still runs: the run ran on B, and A followed it in the store.
    expect(answer.status).toBe(200);
    const body = (await answer.json()) as { choices: { message: { content: string } }[] };
    expect(body.choices[0]!.message.content).toContain('echo me');
    const runId = answer.headers.get('x-paddock-run-id')!;
    expect(ownerOf(runId)).toBe(hostIdOf(homeB));
    expect(held.every((id) => rv.has(id))).toBe(true);
    await release(held);
  });

  it('a one-off `paddock dispatch` whose run a server took on waits for its end there and exits with it', async () => {
    // Four commands on one data folder hold its host's four slots; a fifth waits for one, and a server takes it on.
    const dispatchFile = (event: unknown) => {
      const file = join(homeD, `event-${Math.random().toString(36).slice(2)}.json`);
      writeFileSync(file, JSON.stringify(event));
      return paddock(['dispatch', '-f', file], { dataDir: homeD, env });
    };
    const holding = Array.from({ length: SLOTS }, (_, i) =>
      dispatchFile(chatEvent({ bot: 'held', text: 'hold', conversation: { id: `cli-held-${i}` } })),
    );
    // The commands share the folder's host id; each registers a start of it.
    const runningOnD = () =>
      existsSync(join(homeD, 'host-id'))
        ? query("SELECT id FROM runs WHERE owner_host = ? AND status = 'running'", hostIdOf(homeD)).map((r) => r.id)
        : [];
    await expect.poll(() => runningOnD().length, { timeout: 30_000 }).toBe(SLOTS);
    const held = runningOnD() as string[];
    const waiting = dispatchFile(chatEvent({ bot: 'echo', text: 'from the command', conversation: { id: 'cli-m' } }));
    const done = await waiting;
    // It ended while the four still hold their slots: a server ran it, and the command waited for that end.
    expect(held.every((runId) => rv.has(runId))).toBe(true);
    expect(done.exitCode, done.stderr).toBe(0);
    const movedRunId = /\brun (run_[0-9a-f-]+)/.exec(done.stdout)?.[1];
    expect(movedRunId, done.stdout).toBeDefined();
    expect([hostIdOf(homeA), hostIdOf(homeB)]).toContain(ownerOf(movedRunId!));
    for (const runId of held) rv.go(runId);
    for (const command of holding) expect((await command).exitCode).toBe(0);
  });

  it("a host that cannot run a binding's runner takes none of its runs; one that can takes them", async () => {
    const before = hostB!;
    hostB = undefined;
    expect(await before.stop()).toBe(0);
    // C finds no fixture runner (`waits-for-go` among them): only the built-in ones.
    hostC = await startServe(homeC, [], { ...env, PADDOCK_RUNNER_DIRS: '' });
    const held = await fillA('two');
    const waiting = await queueOnA('held', 'hold', 'm2');
    // Three of C's renewals after the run waited its second: each would have taken it on.
    const renewedAt = () =>
      Number(query('SELECT lease_until FROM hosts WHERE host_id = ?', hostIdOf(homeC))[0]!.lease_until);
    const from = renewedAt();
    await expect.poll(renewedAt, { timeout: 20_000 }).toBeGreaterThanOrEqual(from + 3 * (LEASE_MS / 4) + 1_000);
    expect(ownerOf(waiting.runId)).toBe(hostIdOf(homeA));
    hostB = await startServe(homeB, [], env);
    await rv.arrived(waiting.runId);
    expect(ownerOf(waiting.runId)).toBe(hostIdOf(homeB));
    await release([...held, waiting.runId]);
  });
});
