// Steering `append` across hosts (docs/approvals.md §7, docs/scale-out.md §4): a message posted to host B for a run
// host A runs reaches A's runner through the store (`run_messages`), and B answers `appended`; a refusal, or an owner
// that does not take the message in time, makes it a queued run of its own on B — run once, never lost. Two real
// `paddock serve` processes on one throwaway PostgreSQL cluster, real runner processes.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyWithPlatformToken } from '../../helpers/cli.js';
import { chatEvent, FIXTURE_RUNNERS } from '../../helpers/host.js';
import { queryPg, startPgCluster, type PgCluster } from '../../helpers/pgCluster.js';
import { rendezvous } from '../../helpers/rendezvous.js';
import { startServe, stopHostsThen, type ServeChild } from '../../helpers/serve.js';
import { dispatchTo, runFrom } from '../../helpers/serveApi.js';

const homeA = mkdtempSync(join(tmpdir(), 'paddock-pg-append-a-'));
const homeB = mkdtempSync(join(tmpdir(), 'paddock-pg-append-b-'));
const rv = rendezvous(homeA);
let cluster: PgCluster;
let hostA: ServeChild | undefined;
let hostB: ServeChild | undefined;
let token = '';

/** Well inside the asker's take bound (5 s): an answer that waited it out is the bug. */
const ASK_TAKE_BOUND_MS = 4_000;

const post = (host: ServeChild, bot: string, text: string, conversation: string, id?: string) =>
  dispatchTo(host, token, chatEvent({ bot, text, conversation: { id: conversation }, ...(id ? { id } : {}) }));

/** One query on the shared database. */
const query = (sql: string, ...params: unknown[]) => queryPg(cluster.url, sql, ...params);

/** A completed run's text output, as any host serves it. */
async function outputOn(host: ServeChild, runId: string): Promise<string> {
  await expect.poll(async () => (await runFrom(host, token, runId)).status, { timeout: 20_000 }).toBe('completed');
  const ended = query("SELECT data FROM events WHERE run_id = ? AND type = 'run.ended'", runId)[0]!;
  const data = JSON.parse(String(ended.data)) as { result?: { output?: { parts: { text?: string }[] } } };
  return data.result?.output?.parts[0]?.text ?? '';
}

beforeAll(async () => {
  cluster = startPgCluster();
  // A lease longer than the asker's answer bound (15 s): a stalled owner is still the owner past it.
  const env = { PADDOCK_RUNNER_DIRS: FIXTURE_RUNNERS, PADDOCK_DATABASE_URL: cluster.url, PADDOCK_LEASE_MS: '60000' };
  const binding = (id: string, mode: string) =>
    `  - { id: ${id}, runner: takes-appended-messages, sandbox: process, steering: append, route: { bot: ${id} }, ` +
    `config: { socket: ${JSON.stringify(rv.path)}, mode: ${mode} } }\n`;
  token = await applyWithPlatformToken(
    homeA,
    `bindings:\n${binding('takes', 'take')}${binding('refuses', 'refuse')}${binding('slow', 'slow-take')}`,
    env,
  );
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

describe('steering append across hosts (PostgreSQL)', () => {
  it('a message posted to B reaches the run A runs: appended, recorded in that run, one run', async () => {
    const first = await post(hostA!, 'takes', 'fix the bug', 'x1');
    await rv.arrived(first.runId);
    const second = await post(hostB!, 'takes', 'and add a test', 'x1', 'ev-x1-2');
    expect(second).toMatchObject({ status: 'appended', runId: first.runId, sessionId: first.sessionId });
    // The same event redelivered to either host is a duplicate of the appended one.
    for (const host of [hostA!, hostB!])
      expect(await post(host, 'takes', 'and add a test', 'x1', 'ev-x1-2')).toMatchObject({
        status: 'duplicate',
        runId: first.runId,
      });
    rv.go(first.runId);
    expect(await outputOn(hostB!, first.runId)).toBe('done: fix the bug + and add a test (14 bytes)');
    const runs = query('SELECT id FROM runs WHERE session_id = ?', first.sessionId);
    expect(runs).toEqual([{ id: first.runId }]);
    const appended = query(
      "SELECT run_id FROM events WHERE session_id = ? AND type = 'message.received' AND run_id IS NOT NULL",
      first.sessionId,
    );
    expect(appended).toEqual([{ run_id: first.runId }]);
    expect(query('SELECT status, asked_by FROM run_messages')).toEqual([
      { status: 'accepted', asked_by: expect.stringMatching(/^host hst_\S+ \(epoch 1\)$/) },
    ]);
  });

  it('one event posted to A and B at once: taken once by the runner, the other copy a duplicate at once', async () => {
    const first = await post(hostA!, 'takes', 'start', 'x4');
    await rv.arrived(first.runId);
    for (let round = 0; round < 3; round++) {
      const id = `ev-x4-twice-${round}`;
      const started = performance.now();
      const answers = await Promise.all([hostA!, hostB!].map((h) => post(h, 'takes', `again ${round}`, 'x4', id)));
      // Before, B's copy waited out the 15 s bound, and the runner had been given the message by both paths.
      expect(performance.now() - started).toBeLessThan(ASK_TAKE_BOUND_MS);
      expect(answers.map((a) => a.status).sort()).toEqual(['appended', 'duplicate']);
      for (const a of answers) expect(a.runId).toBe(first.runId);
    }
    rv.go(first.runId);
    expect(await outputOn(hostA!, first.runId)).toBe(
      'done: start + again 0 (7 bytes) + again 1 (7 bytes) + again 2 (7 bytes)',
    );
  });

  it('an ask naming a run of another tenant or session is refused, never given to the runner', async () => {
    const first = await post(hostA!, 'takes', 'mine', 'x5');
    await rv.arrived(first.runId);
    const forged = chatEvent({ bot: 'takes', text: 'FORGED', conversation: { id: 'x5' }, id: 'ev-forged' });
    query(
      'INSERT INTO run_messages (id, run_id, session_id, tenant, delivery_key, event, status, asked_by, asked_at) ' +
        "VALUES ('msg_forged', ?, 'ses_elsewhere', 'acme', 'k-forged', ?, 'pending', 'someone', 'now') RETURNING id",
      first.runId,
      JSON.stringify(forged),
    );
    query("SELECT pg_notify('paddock_controls', '')");
    await expect
      .poll(() => query("SELECT status, reason FROM run_messages WHERE id = 'msg_forged'")[0], { timeout: 10_000 })
      .toEqual({ status: 'refused', reason: expect.stringMatching(/does not match run/) });
    rv.go(first.runId);
    expect(await outputOn(hostA!, first.runId)).toBe('done: mine');
  });

  it('a stalled owner past the answer bound while delivering is waited for: appended once, not run twice', async () => {
    const first = await post(hostA!, 'slow', 'gamma', 'x6');
    await rv.arrived(first.runId);
    const started = performance.now();
    const answer = post(hostB!, 'slow', 'delta', 'x6');
    const delivering = () => query('SELECT status FROM run_messages WHERE run_id = ?', first.runId)[0]?.status;
    await expect.poll(delivering, { timeout: 10_000, interval: 20 }).toBe('delivering'); // its runner has it
    hostA!.child.kill('SIGSTOP'); // A stalls past the asker's 15 s answer bound; its 60 s lease still holds
    try {
      while (performance.now() - started < 16_500) await new Promise((resolve) => setTimeout(resolve, 250));
      expect(delivering()).toBe('delivering'); // before, the asker withdrew it at 15 s and ran it on its own too
    } finally {
      hostA!.child.kill('SIGCONT');
    }
    expect(await answer).toMatchObject({ status: 'appended', runId: first.runId });
    rv.go(first.runId);
    expect(await outputOn(hostA!, first.runId)).toBe('done: gamma + delta (5 bytes)');
    expect(query('SELECT id FROM runs WHERE session_id = ?', first.sessionId)).toEqual([{ id: first.runId }]);
  }, 60_000);

  it('refused by the runner: a queued run of its own on B, saying why, and it runs next', async () => {
    const first = await post(hostA!, 'refuses', 'one', 'x2');
    await rv.arrived(first.runId);
    const second = await post(hostB!, 'refuses', 'two', 'x2');
    expect(second).toMatchObject({ status: 'queued', notAppended: { code: 'refused' } });
    expect(second.runId).not.toBe(first.runId);
    rv.go(first.runId);
    await rv.arrived(second.runId);
    rv.go(second.runId);
    expect(await outputOn(hostA!, second.runId)).toBe('done: two');
  });

  it('an owner that does not take it in time: withdrawn, a run of its own, never given to the runner too', async () => {
    const first = await post(hostA!, 'takes', 'alpha', 'x3');
    await rv.arrived(first.runId);
    hostA!.child.kill('SIGSTOP'); // its watcher cannot take the ask (its lease, 15 s, outlives the bound)
    let second: Awaited<ReturnType<typeof post>>;
    try {
      second = await post(hostB!, 'takes', 'beta', 'x3');
    } finally {
      hostA!.child.kill('SIGCONT');
    }
    expect(second).toMatchObject({ status: 'queued', notAppended: { code: 'other_process' } });
    expect(second.notAppended?.message).toMatch(/did not take it within/);
    expect(query('SELECT status FROM run_messages WHERE run_id = ?', first.runId)).toEqual([{ status: 'withdrawn' }]);
    rv.go(first.runId);
    expect(await outputOn(hostA!, first.runId)).toBe('done: alpha'); // the runner never got "beta"
    await rv.arrived(second.runId);
    rv.go(second.runId);
    expect(await outputOn(hostB!, second.runId)).toBe('done: beta');
  });
});
