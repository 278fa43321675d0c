// One service, many clients (docs/http-api.md): a `paddock serve` child and `paddock dispatch` CLI processes on the
// same data folder. Per-session serialisation, a session's queue bound and a binding's concurrency limit are decided
// by the store, so they hold whichever process accepted the event; and the server's streams show what a CLI commits.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { paddock } from '../helpers/cli.js';
import { chatEvent, FIXTURE_RUNNERS } from '../helpers/host.js';
import { rendezvous } from '../helpers/rendezvous.js';
import { startServe, type ServeChild } from '../helpers/serve.js';
import { openSse, type SseClient } from '../helpers/sse.js';

const env = { PADDOCK_RUNNER_DIRS: FIXTURE_RUNNERS };
const home = mkdtempSync(join(tmpdir(), 'paddock-serve-cli-'));
const rv = rendezvous(home);
let server: ServeChild;
let token = '';

beforeAll(async () => {
  const waits = `runner: waits-for-go, sandbox: process, config: { socket: ${JSON.stringify(rv.path)} }`;
  const yaml = [
    'bindings:',
    `  - { id: shared, ${waits}, route: { platform: telegram, bot: shared }, limits: { maxQueued: 1 } }`,
    `  - { id: narrow, ${waits}, route: { platform: telegram, bot: narrow }, limits: { maxConcurrentRuns: 1 } }`,
  ].join('\n');
  writeFileSync(join(home, 'paddock.yaml'), `${yaml}\n`);
  const applied = await paddock(['apply', '-f', join(home, 'paddock.yaml')], { dataDir: home, env });
  expect(applied.exitCode, applied.stderr).toBe(0);
  const create = ['tokens', 'create', '--tenant', 'default', '--role', 'platform'];
  const created = await paddock(create, { dataDir: home, env });
  expect(created.exitCode, created.stderr).toBe(0);
  token = created.stdout.trim();
  server = await startServe(home, ['--rate', '1000', '--burst', '1000'], env);
}, 120_000);
afterAll(async () => {
  expect(await server?.stop()).toBe(0);
  rv.close();
});

/** POST /v1/events with the platform token. */
async function post(event: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${server.url}/v1/events`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(event),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** A `paddock dispatch --json` of `event` on the shared data folder, with a way to wait for its output lines. */
function cliDispatch(event: unknown): {
  child: ReturnType<typeof paddock>;
  line: (match: (l: Record<string, unknown>) => boolean) => Promise<Record<string, unknown>>;
} {
  const file = join(home, `event-${(event as { id: string }).id}.json`);
  writeFileSync(file, JSON.stringify(event));
  const child = paddock(['dispatch', '-f', file, '--json'], { dataDir: home, env });
  const lines: Record<string, unknown>[] = [];
  const waiters: { match: (l: Record<string, unknown>) => boolean; resolve: (l: Record<string, unknown>) => void }[] =
    [];
  let buffered = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    let nl;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const l = JSON.parse(buffered.slice(0, nl)) as Record<string, unknown>;
      buffered = buffered.slice(nl + 1);
      lines.push(l);
      for (const w of waiters.filter((x) => x.match(l))) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(l);
      }
    }
  });
  const line = (match: (l: Record<string, unknown>) => boolean) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const seen = lines.find(match);
      if (seen) return resolve(seen);
      waiters.push({ match, resolve });
      void child.then((r) =>
        reject(new Error(`paddock dispatch exited ${r.exitCode} first:\n${r.stdout}\n${r.stderr}`)),
      );
    });
  return { child, line };
}

/** The CLI's "dispatched to binding …: run <id> <status>" note, parsed. */
async function dispatched(cli: ReturnType<typeof cliDispatch>): Promise<{ runId: string; status: string }> {
  const note = await cli.line((l) => l.type === 'note' && String(l.text).startsWith('dispatched to binding'));
  const [, runId, status] = /run (\S+) (\w+)/.exec(String(note.text))!;
  return { runId: runId!, status: status! };
}

/** The session stream's messages as (event type, run id, seq). */
const timeline = (sse: SseClient) =>
  sse.messages.map((m) => {
    const e = JSON.parse(m.data) as { type: string; runId: string | null; seq: number };
    return { type: e.type, runId: e.runId, seq: e.seq };
  });

describe('paddock serve and the CLI on one data folder', () => {
  it("one conversation: a CLI run waits behind the server's, fills its queue, and the server streams it", async () => {
    const first = await post(chatEvent({ bot: 'shared', conversation: { id: 'one' }, text: 'from http' }));
    expect(first.status).toBe(202);
    expect(first.body.status).toBe('started');
    const runA = String(first.body.runId);
    await rv.arrived(runA);
    const sse = await openSse(`${server.url}/v1/sessions/${String(first.body.sessionId)}/events`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(sse.status).toBe(200);

    const cli = cliDispatch(chatEvent({ bot: 'shared', conversation: { id: 'one' }, text: 'from cli' }));
    const queued = await dispatched(cli);
    expect(queued.status).toBe('queued');
    // The server's stream shows the CLI's commit (another process: seen through the store).
    while (!timeline(sse).some((e) => e.type === 'run.queued' && e.runId === queued.runId))
      await sse.waitForCount(sse.messages.length + 1);
    // The queue bound (one waiting message) counts the CLI's waiting run: the server refuses the next.
    const third = await post(chatEvent({ bot: 'shared', conversation: { id: 'one' }, text: 'one too many' }));
    expect(third.status).toBe(429);
    expect(third.body).toMatchObject({ code: 'queue_full' });
    expect(rv.has(queued.runId)).toBe(false);

    rv.go(runA);
    await rv.arrived(queued.runId);
    rv.go(queued.runId);
    const done = await cli.child;
    expect(done.exitCode, done.stderr).toBe(0);
    while (!timeline(sse).some((e) => e.type === 'run.ended' && e.runId === queued.runId))
      await sse.waitForCount(sse.messages.length + 1);
    sse.destroy();
    const events = timeline(sse);
    const seqOf = (type: string, runId: string) => events.find((e) => e.type === type && e.runId === runId)!.seq;
    // Serialised: the CLI's run started only after the server's run ended, in one per-session order.
    expect(seqOf('run.started', queued.runId)).toBeGreaterThan(seqOf('run.ended', runA));
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => events[0]!.seq + i));
  });

  for (const order of ['server first', 'CLI first'] as const) {
    it(`a binding's concurrency limit holds across processes (${order})`, async () => {
      const tag = order === 'server first' ? 's' : 'c';
      let holder: string;
      let waiter: { runId: string; status: string };
      let cli: ReturnType<typeof cliDispatch>;
      if (order === 'server first') {
        const held = await post(chatEvent({ bot: 'narrow', conversation: { id: `${tag}-a` } }));
        expect(held.body.status).toBe('started');
        holder = String(held.body.runId);
        await rv.arrived(holder);
        cli = cliDispatch(chatEvent({ bot: 'narrow', conversation: { id: `${tag}-b` } }));
        waiter = await dispatched(cli);
      } else {
        cli = cliDispatch(chatEvent({ bot: 'narrow', conversation: { id: `${tag}-a` } }));
        const started = await dispatched(cli);
        expect(started.status).toBe('started');
        holder = started.runId;
        await rv.arrived(holder);
        const second = await post(chatEvent({ bot: 'narrow', conversation: { id: `${tag}-b` } }));
        expect(second.status).toBe(202);
        waiter = { runId: String(second.body.runId), status: String(second.body.status) };
      }
      // Another session of the same binding, while its one slot is taken by the other process: it waits.
      expect(waiter.status).toBe('queued');
      expect(rv.has(waiter.runId)).toBe(false);
      rv.go(holder);
      await rv.arrived(waiter.runId);
      rv.go(waiter.runId);
      const done = await cli.child;
      expect(done.exitCode, done.stderr).toBe(0);
    });
  }
});
