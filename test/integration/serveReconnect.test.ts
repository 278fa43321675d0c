// The check, end to end over real HTTP: `paddock serve` as a child process, a real runner streaming many
// events into one session (run after run), and a client that cuts its connection at random points and reconnects
// with Last-Event-ID, 200 times. Across all its connections it must have seen every stored event exactly once, in
// order, byte for byte. Seeded: a failure names its seed (SSE_SEED=<seed> replays the client's choices).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { paddock } from '../helpers/cli.js';
import { chatEvent, FIXTURE_RUNNERS } from '../helpers/host.js';
import { startServe, type ServeChild } from '../helpers/serve.js';
import { openSse, type SseMessage } from '../helpers/sse.js';

const env = { PADDOCK_RUNNER_DIRS: FIXTURE_RUNNERS };
/** Framing attacks and one message large enough to be split across TCP reads (a cut then lands inside it). */
const DELTAS = ['plain', '\n\ndata: forged\n\n', '\r\rid: 424242\r\r', 'line\u2028sep', `${'w'.repeat(30_000)}\n`];

/** A small seeded generator (mulberry32). */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

const home = mkdtempSync(join(tmpdir(), 'paddock-serve-reconnect-'));
let server: ServeChild;
let token = '';

beforeAll(async () => {
  const yaml = [
    'bindings:',
    '  - id: streamed',
    '    runner: streams-given-deltas',
    '    sandbox: process',
    '    route: { platform: telegram, bot: streamed }',
    `    config: { deltas: ${JSON.stringify(DELTAS)}, repeat: 1000 }`,
  ].join('\n');
  writeFileSync(join(home, 'paddock.yaml'), `${yaml}\n`);
  const applied = await paddock(['apply', '-f', join(home, 'paddock.yaml')], { dataDir: home, env });
  expect(applied.exitCode, applied.stderr).toBe(0);
  const created = await paddock(['tokens', 'create', '--tenant', 'default', '--role', 'platform'], { dataDir: home });
  expect(created.exitCode, created.stderr).toBe(0);
  token = created.stdout.trim();
  // The client reconnects before the server has seen its last connection close: room for those in flight.
  server = await startServe(home, ['--rate', '100000', '--burst', '100000', '--max-streams-per-token', '64'], env);
}, 60_000);
afterAll(async () => {
  expect(await server.stop()).toBe(0);
});

describe('paddock serve: reconnects', () => {
  it(
    '200 connections cut at random points and resumed with Last-Event-ID while runs stream: ' +
      'every event exactly once, in order',
    async () => {
      const seed = Number(process.env.SSE_SEED ?? Date.now() % 1_000_000);
      const rand = random(seed);
      const auth = { authorization: `Bearer ${token}` };
      const dispatch = async (i: number) => {
        const event = chatEvent({ bot: 'streamed', text: `run ${i}`, conversation: { id: 'reconnects' } });
        const res = await fetch(`${server.url}/v1/events`, {
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/json' },
          body: JSON.stringify(event),
        });
        expect(res.status).toBe(202);
        return (await res.json()) as { runId: string; sessionId: string; links: { runEvents: string } };
      };
      // Three runs queued in one session at once: they run one after another (the binding's steering is `queue`)
      // while the client reconnects, each streaming 1 000+ events.
      const dispatched = [await dispatch(0), await dispatch(1), await dispatch(2)];
      const { sessionId } = dispatched[0]!;
      expect(dispatched.map((d) => d.sessionId)).toEqual([sessionId, sessionId, sessionId]);

      const seen: SseMessage[] = [];
      let last: string | undefined;
      const connect = () =>
        openSse(`${server.url}/v1/sessions/${sessionId}/events`, {
          headers: auth,
          ...(last !== undefined ? { lastEventId: last } : {}),
          onMessage: (m) => seen.push(m),
        });
      for (let i = 0; i < 200; i++) {
        const c = await connect();
        expect(c.status, `seed ${seed}`).toBe(200);
        // Cut once a random number of bytes has arrived (often inside a message), or after a random number of
        // event-loop turns (0: at once, before the catch-up is read), whichever comes first.
        const bytes = Math.floor(rand() * 64 * 1024);
        const turns = Math.floor(rand() ** 2 * 40);
        for (let t = 0; t < turns && c.bytes() < bytes; t++) await turn();
        c.destroy();
        await c.closed;
        // Only whole messages count: a message cut in half was never dispatched, so it is sent again.
        if (c.messages.length > 0) last = c.messages.at(-1)!.id;
      }
      // Every run's end, seen on its own run stream (a second client).
      for (const d of dispatched) {
        const run = await openSse(`${server.url}${d.links.runEvents}`, { headers: auth });
        expect(await run.closed).toBe('end');
        expect(run.messages.at(-1)?.event).toBe('run.ended');
      }

      const db = new Database(join(home, 'paddock.db'), { readonly: true });
      const stored = () =>
        db.prepare('SELECT * FROM events WHERE session_id = ? ORDER BY seq').all(sessionId) as {
          id: string;
          seq: number;
          type: string;
          run_id: string | null;
          at: string;
          data: string;
        }[];
      // The last connection catches up to everything stored once the last run has ended.
      const target = stored().at(-1)!.seq;
      const missing = stored().length - seen.length;
      const final = await connect();
      await final.waitForCount(missing);
      final.destroy();
      const upTo = Number(seen.at(-1)!.id);
      expect(upTo).toBeGreaterThanOrEqual(target);
      const all = stored().filter((e) => e.seq <= upTo);
      db.close();
      expect(
        seen.map((m) => Number(m.id)),
        `seed ${seed}`,
      ).toEqual(all.map((e) => e.seq));
      expect(
        seen.map((m) => JSON.parse(m.data) as unknown),
        `seed ${seed}`,
      ).toEqual(
        all.map((e) => ({
          id: e.id,
          sessionId,
          seq: e.seq,
          type: e.type,
          runId: e.run_id,
          at: e.at,
          data: JSON.parse(e.data) as unknown,
        })),
      );
      expect(seen.map((m) => m.event)).toEqual(all.map((e) => e.type));
      expect(all.filter((e) => e.type === 'run.ended')).toHaveLength(3);
      expect(all.length).toBeGreaterThan(3000);
      console.log(`serveReconnect: seed ${seed}, ${all.length} events, 201 connections`);
    },
    60_000,
  );
});
