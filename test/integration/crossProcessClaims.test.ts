import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { processStartTime } from '../../host/util/procIdentity.js';
import { paddock } from '../helpers/cli.js';
import { chatEvent, FIXTURE_RUNNERS, tempHost } from '../helpers/host.js';

// Issue 11, item 17: one active run per session and the concurrency limits are decided by the
// store, so they hold across several real `paddock dispatch` processes on one data folder.

/**
 * The test's end of the rendezvous runner. Every run connects and says its id; the server notes
 * how many runs were connected at that moment and lets each finish after `holdMs` (the "slow
 * runner"), or holds it until released when `hold` says so.
 */
function slowServer(holdMs: number, hold: (text: string) => boolean = () => false) {
  const path = join(mkdtempSync(join(tmpdir(), 'paddock-claims-')), 'rv.sock');
  const open = new Set<Socket>();
  const arrivals: { runId: string; text: string; connectedNow: number }[] = [];
  const held = new Map<string, Socket>();
  const server = createServer((socket) => {
    let buffered = '';
    open.add(socket);
    socket.on('close', () => open.delete(socket));
    socket.on('error', () => undefined);
    socket.on('data', (chunk) => {
      buffered += chunk.toString();
      if (!buffered.includes('\n')) return;
      const [runId, ...words] = buffered.trim().split(' ');
      const text = words.join(' ');
      arrivals.push({ runId: runId!, text, connectedNow: open.size });
      if (hold(text)) held.set(text, socket);
      else setTimeout(() => socket.write('go\n'), holdMs);
    });
  }).listen(path);
  return { path, arrivals, held, close: () => server.close() };
}

interface RunTimes {
  id: string;
  session_id: string;
  binding_id: string;
  status: string;
  started_at: string | null;
  ended_at: string | null;
  queued_seq: number;
}

function runsOf(dataDir: string, bindingId: string): RunTimes[] {
  const db = new Database(join(dataDir, 'paddock.db'), { readonly: true });
  try {
    return db
      .prepare(
        'SELECT id, session_id, binding_id, status, started_at, ended_at, queued_seq FROM runs WHERE ' +
          'binding_id = ? ORDER BY started_at',
      )
      .all(bindingId) as RunTimes[];
  } finally {
    db.close();
  }
}

/** The most runs that were running at one instant, from the store's started/ended times. */
function maxOverlap(runs: RunTimes[]): number {
  const points = runs.flatMap((r) => [
    { t: Date.parse(r.started_at!), d: 1 },
    { t: Date.parse(r.ended_at!), d: -1 },
  ]);
  // An end and a start at the same millisecond do not overlap: ends first.
  points.sort((a, b) => a.t - b.t || a.d - b.d);
  let now = 0;
  let max = 0;
  for (const p of points) max = Math.max(max, (now += p.d));
  return max;
}

const eventFile = (dir: string, bot: string, conversation: string, text: string) => {
  const file = join(dir, `${text.replace(/\W/g, '_')}.json`);
  writeFileSync(file, JSON.stringify(chatEvent({ bot, conversation: { id: conversation }, text })));
  return file;
};

/** A data folder with the rendezvous bindings applied, and a way to start real CLI dispatches on it. */
async function setup(socket: string) {
  const host = tempHost();
  const base = { runner: 'waits-for-go', sandbox: 'process', config: { socket }, limits: { wallClockMs: 120_000 } };
  host.apply({
    bindings: [
      { id: 'conv', ...base, route: { platform: 'telegram', bot: 'conv' } },
      {
        id: 'one-at-a-time',
        ...base,
        route: { platform: 'telegram', bot: 'serial' },
        limits: { ...base.limits, maxConcurrentRuns: 1 },
      },
      {
        id: 'two-at-a-time',
        ...base,
        route: { platform: 'telegram', bot: 'pair' },
        limits: { ...base.limits, maxConcurrentRuns: 2 },
      },
    ],
  });
  await host.close();
  const dir = mkdtempSync(join(tmpdir(), 'paddock-claims-events-'));
  const dispatch = (bot: string, conversation: string, text: string) =>
    paddock(['dispatch', '-f', eventFile(dir, bot, conversation, text), '--json'], {
      dataDir: host.dataDir,
      env: { PADDOCK_RUNNER_DIRS: FIXTURE_RUNNERS },
    });
  return { dataDir: host.dataDir, dispatch };
}

const servers: { close(): void }[] = [];
afterAll(() => servers.forEach((s) => s.close()));

describe('claims across real paddock processes on one data folder', () => {
  for (const n of [3, 5]) {
    it(
      `${n} concurrent dispatches for one conversation: their runs never overlap and all ` + `complete, in queue order`,
      async () => {
        const rv = slowServer(300);
        servers.push(rv);
        const { dataDir, dispatch } = await setup(rv.path);
        const results = await Promise.all(
          Array.from({ length: n }, (_, i) => dispatch('conv', 'same', `message ${i}`)),
        );
        for (const r of results) expect(r.exitCode, r.stderr).toBe(0);
        const runs = runsOf(dataDir, 'conv');
        expect(runs).toHaveLength(n);
        expect(new Set(runs.map((r) => r.session_id)).size).toBe(1);
        expect(runs.every((r) => r.status === 'completed')).toBe(true);
        expect(maxOverlap(runs)).toBe(1);
        // In order: the order they started in is the order they were queued in, each after the last ended.
        expect(runs.map((r) => r.queued_seq)).toEqual([...runs.map((r) => r.queued_seq)].sort((a, b) => a - b));
        for (let i = 1; i < runs.length; i++)
          expect(Date.parse(runs[i]!.started_at!)).toBeGreaterThanOrEqual(Date.parse(runs[i - 1]!.ended_at!));
        // The runners themselves never met: each found no other run connected.
        expect(rv.arrivals.map((a) => a.connectedNow)).toEqual(Array(n).fill(1));
      },
      300_000,
    );
  }

  it("a binding's maxConcurrentRuns holds across processes (different conversations)", async () => {
    const rv = slowServer(400);
    servers.push(rv);
    const { dataDir, dispatch } = await setup(rv.path);
    const results = await Promise.all([
      ...Array.from({ length: 3 }, (_, i) => dispatch('serial', `s${i}`, `serial ${i}`)),
      ...Array.from({ length: 4 }, (_, i) => dispatch('pair', `p${i}`, `pair ${i}`)),
    ]);
    for (const r of results) expect(r.exitCode, r.stderr).toBe(0);
    const serial = runsOf(dataDir, 'one-at-a-time');
    const pair = runsOf(dataDir, 'two-at-a-time');
    expect(serial.map((r) => r.status)).toEqual(['completed', 'completed', 'completed']);
    expect(new Set(serial.map((r) => r.session_id)).size).toBe(3);
    expect(maxOverlap(serial)).toBe(1);
    expect(pair).toHaveLength(4);
    expect(maxOverlap(pair)).toBeLessThanOrEqual(2);
  }, 300_000);

  it(
    "a SIGKILLed claimant's claim is reclaimed: the waiting process kills its orphaned runner, interrupts its " +
      'run and starts its own',
    async () => {
      const rv = slowServer(200, (text) => text === 'first');
      servers.push(rv);
      const { dataDir, dispatch } = await setup(rv.path);
      const first = dispatch('conv', 'crash', 'first');
      // Wait (event-driven) until the first run's runner is connected, holding its claim.
      await new Promise<void>((resolve) => {
        const check = () => (rv.held.has('first') ? resolve() : setTimeout(check, 20));
        check();
      });
      const second = dispatch('conv', 'crash', 'second');
      // The second process queues behind the claim (its run is recorded queued, unclaimed) …
      const db = new Database(join(dataDir, 'paddock.db'), { readonly: true });
      const queued = () =>
        db.prepare("SELECT count(*) FROM runs WHERE binding_id = 'conv' AND status = 'queued'").pluck().get() as number;
      await new Promise<void>((resolve) => {
        const check = () => (queued() === 1 ? resolve() : setTimeout(check, 20));
        check();
      });
      const held = db
        .prepare("SELECT id, pid, pid_start FROM runs WHERE binding_id = 'conv' AND status = 'running'")
        .get() as { id: string; pid: number; pid_start: number };
      db.close();
      expect(processStartTime(held.pid)).toBe(held.pid_start); // the runner is alive
      // … then the claimant dies without a word (no run.ended, its claim left in the store).
      first.kill('SIGKILL');
      await first;
      const out = await second;
      expect(out.exitCode, out.stderr).toBe(0);
      const runs = runsOf(dataDir, 'conv');
      const crashed = runs.find((r) => r.id === held.id)!;
      const next = runs.find((r) => r.id !== held.id)!;
      expect(crashed.status).toBe('interrupted');
      expect(next.status).toBe('completed');
      expect(Date.parse(next.started_at!)).toBeGreaterThanOrEqual(Date.parse(crashed.ended_at!));
      expect(processStartTime(held.pid)).not.toBe(held.pid_start); // its orphaned runner was killed
      const check = new Database(join(dataDir, 'paddock.db'), { readonly: true });
      expect(check.prepare('SELECT count(*) FROM run_claims').pluck().get()).toBe(0);
      check.close();
    },
    300_000,
  );
});
