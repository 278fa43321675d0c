// The SSE stream over a real store (SQLite in a temp folder) and a real HTTP server on loopback.
import { connect } from 'node:net';
import { afterAll, describe, expect, it, vi } from 'vitest';
import type { NewEvent, Store } from '../../../../host/state/store.js';
import { openSse, type SseMessage } from '../../../helpers/sse.js';
import { streamServer } from '../../../helpers/streamServer.js';
import { tempStore } from '../../../helpers/store.js';

const { store } = tempStore();
const srv = await streamServer(store, { heartbeatMs: 40 });
afterAll(async () => {
  await srv.close();
  store.close();
});

let conversations = 0;
const newSession = (s: Store = store) => s.ensureSession('default', 'b', `c-${++conversations}`).sessionId;
const delta = (runId: string | null, text: string, runnerSeq = 1): NewEvent => ({
  type: 'run.update',
  runId,
  data: { runnerSeq, update: { kind: 'message.delta', text } },
});
const queued = (runId: string): NewEvent => ({
  type: 'run.queued',
  runId,
  data: { runner: 'r', goalRevision: 0, attempt: 1 },
});
/** A run's updates come after its `run.started`, as the host writes them (a run's stream reads them from there on). */
const started = (runId: string): NewEvent => ({
  type: 'run.started',
  runId,
  data: { pid: 1, pidStart: null, recoveryDelivered: [] },
});
const ended = (runId: string): NewEvent => ({
  type: 'run.ended',
  runId,
  data: { status: 'completed', reason: 'done', exitCode: 0, signal: null },
});
/** What a client must have seen: the stored events, exactly, as parsed JSON. */
const stored = (sessionId: string, after = 0) => store.readEvents(sessionId, after);
const parsed = (messages: SseMessage[]) => messages.map((m) => JSON.parse(m.data) as unknown);

describe('SSE stream of a session', () => {
  it(
    'sends every stored event after the start, then ' + 'live ones, as id/event/data messages with SSE headers',
    async () => {
      const sessionId = newSession();
      store.append(sessionId, [delta('run_a', 'one'), delta('run_a', 'two', 2)]);
      const c = await openSse(srv.url(`/sessions/${sessionId}/events`));
      expect(c.status).toBe(200);
      expect(c.headers).toMatchObject({
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        'x-accel-buffering': 'no',
        'x-request-id': 'req-test',
      });
      await c.waitForCount(3); // session.created + two
      store.append(sessionId, [delta('run_a', 'three', 3)]);
      await c.waitForCount(4);
      expect(parsed(c.messages)).toEqual(stored(sessionId));
      expect(c.messages.map((m) => [m.id, m.event, m.fields])).toEqual(
        stored(sessionId).map((e) => [String(e.seq), e.type, ['id', 'event', 'data']]),
      );
      c.destroy();
    },
  );

  it('starts after ?after= or Last-Event-ID (the header wins); a bad start is a 400 naming each input', async () => {
    const sessionId = newSession();
    store.append(sessionId, [delta(null, 'a'), delta(null, 'b'), delta(null, 'c')]);
    const byQuery = await openSse(srv.url(`/sessions/${sessionId}/events?after=2`));
    await byQuery.waitForCount(2);
    expect(byQuery.messages.map((m) => m.id)).toEqual(['3', '4']);
    const both = await openSse(srv.url(`/sessions/${sessionId}/events?after=1`), { lastEventId: '3' });
    await both.waitForCount(1);
    expect(both.messages.map((m) => m.id)).toEqual(['4']);
    const bad = await openSse(srv.url(`/sessions/${sessionId}/events?after=1.5`), { lastEventId: '-1' });
    expect(bad.status).toBe(400);
    expect(await bad.closed).toBe('end');
    expect(bad.messages).toEqual([]);
    for (const c of [byQuery, both]) c.destroy();
  });

  it('sends a `: hb` comment at the heartbeat interval', async () => {
    const c = await openSse(srv.url(`/sessions/${newSession()}/events`));
    await c.waitForCount(1);
    await new Promise<void>((resolve) => {
      const check = () => (c.parser.comments.length >= 2 ? resolve() : setImmediate(check));
      check();
    });
    expect(new Set(c.parser.comments)).toEqual(new Set([' hb']));
    c.destroy();
  });

  it(
    'framing attack: updates with blank lines, CR, U+2028 and ' + 'a 2 MiB line reach the client exactly as stored',
    async () => {
      const sessionId = newSession();
      const texts = [
        'before\n\ndata: forged\n\nafter',
        '\r\rid: 99999\revent: run.ended\r\r',
        '\r\n\r\ndata: {"forged":true}\r\n\r\n',
        'sep\u2028ar\u2029ated',
        ': not a comment\nretry: 0\n',
        'x'.repeat(2 * 1024 * 1024),
      ];
      const c = await openSse(srv.url(`/sessions/${sessionId}/events`));
      for (const [i, text] of texts.entries()) store.append(sessionId, [delta('run_f', text, i + 1)]);
      await c.waitForCount(texts.length + 1);
      expect(parsed(c.messages)).toEqual(stored(sessionId));
      expect(c.messages.every((m) => m.fields.join() === 'id,event,data')).toBe(true);
      expect(c.messages.map((m) => m.event)).toEqual(['session.created', ...texts.map(() => 'run.update')]);
      c.destroy();
    },
  );

  it('a server stop ends every stream cleanly', async () => {
    const own = tempStore();
    const s = await streamServer(own.store);
    const sessionId = own.store.ensureSession('default', 'b', 'stop').sessionId;
    const clients = await Promise.all([1, 2, 3].map(() => openSse(s.url(`/sessions/${sessionId}/events`))));
    await Promise.all(clients.map((c) => c.waitForCount(1)));
    expect(s.streams.clients).toBe(3);
    s.streams.endAll();
    expect(await Promise.all(clients.map((c) => c.closed))).toEqual(['end', 'end', 'end']);
    expect(s.streams.clients).toBe(0);
    await s.close();
    own.store.close();
  });
});

describe('SSE stream of a run', () => {
  it(
    "sends only the run's events and ends after run.ended; " + 'a run that already ended is replayed, then ends',
    async () => {
      const sessionId = newSession();
      store.append(sessionId, [queued('run_x'), queued('run_y'), started('run_x'), started('run_y')]);
      store.append(sessionId, [delta('run_x', 'x1'), delta('run_y', 'y1')]);
      const live = await openSse(srv.url('/runs/run_x/events'));
      await live.waitForCount(3);
      store.append(sessionId, [delta('run_y', 'y2', 2), delta('run_x', 'x2', 2)]);
      store.append(sessionId, [ended('run_x'), delta(null, 'after the run')]);
      expect(await live.closed).toBe('end');
      const runEvents = stored(sessionId).filter((e) => e.runId === 'run_x');
      expect(parsed(live.messages)).toEqual(runEvents);
      expect(live.messages.at(-1)!.event).toBe('run.ended');

      const replay = await openSse(srv.url('/runs/run_x/events?after=1'));
      expect(await replay.closed).toBe('end');
      expect(parsed(replay.messages)).toEqual(runEvents.filter((e) => e.seq > 1));
      // A client that already has the end (it reconnects with its id) gets an empty stream that ends.
      const after = await openSse(srv.url('/runs/run_x/events'), { lastEventId: live.messages.at(-1)!.id });
      expect(await after.closed).toBe('end');
      expect(after.messages).toEqual([]);
    },
  );

  it('ends after run.interrupted too; a session stream stays open past it', async () => {
    const sessionId = newSession();
    store.append(sessionId, [queued('run_i')]);
    const run = await openSse(srv.url('/runs/run_i/events'));
    const session = await openSse(srv.url(`/sessions/${sessionId}/events`));
    store.append(sessionId, [
      { type: 'run.interrupted', runId: 'run_i', data: { reason: 'host died', killedPid: null } },
    ]);
    expect(await run.closed).toBe('end');
    expect(run.messages.map((m) => m.event)).toEqual(['run.queued', 'run.interrupted']);
    store.append(sessionId, [delta(null, 'later')]);
    await session.waitForCount(4);
    expect(parsed(session.messages)).toEqual(stored(sessionId));
    session.destroy();
  });
});

describe('SSE resources', () => {
  it('1 000 streams opened and closed at random points release every listener and timer', async () => {
    // The earlier tests' streams are over and their kept-alive connections (each with an idle timer) closed: the
    // baseline holds neither.
    await srv.settled();
    srv.server.closeIdleConnections();
    const own = tempStore();
    const s = await streamServer(own.store, { heartbeatMs: 5 });
    const sessions = [1, 2, 3].map((i) => own.store.ensureSession('default', 'b', `leak-${i}`).sessionId);
    const listeners = () => (own.store as unknown as { listeners: Set<unknown> }).listeners.size;
    // Every interval started meanwhile (heartbeats, the watcher's poll) must have been cleared. They are unref'd,
    // so process.getActiveResourcesInfo() would not list them: counted at the source instead.
    const intervals = new Set<unknown>();
    const realSet = globalThis.setInterval;
    const realClear = globalThis.clearInterval;
    const setSpy = vi.spyOn(globalThis, 'setInterval').mockImplementation(((...args: Parameters<typeof realSet>) => {
      const handle = realSet(...args);
      intervals.add(handle);
      return handle;
    }) as typeof setInterval);
    const clearSpy = vi.spyOn(globalThis, 'clearInterval').mockImplementation((handle) => {
      intervals.delete(handle);
      realClear(handle);
    });
    const baseline = listeners();
    // One watcher for every stream: one store listener and one poll timer, whatever the number of streams.
    const twenty = await Promise.all(
      Array.from({ length: 20 }, (_, i) => openSse(s.url(`/sessions/${sessions[i % 3]!}/events`))),
    );
    await Promise.all(twenty.map((c) => c.waitForCount(1)));
    expect(listeners()).toBe(baseline + 1);
    expect(s.streams.watcherStats()).toEqual({ sessions: 3, wakes: 20, listening: true, polling: true });
    expect(setSpy.mock.calls.length).toBe(21); // 20 heartbeats, 1 poll
    for (const c of twenty) c.destroy();
    for (let round = 0; round < 20; round++) {
      await Promise.all(
        Array.from({ length: 50 }, async (_, i) => {
          const sessionId = sessions[i % 3]!;
          const c = await openSse(s.url(`/sessions/${sessionId}/events`));
          if (i % 2 === 0) own.store.append(sessionId, [delta(null, `r${round}`)]);
          if (i % 5 !== 0) await c.waitForCount(1 + (i % 3));
          c.destroy();
        }),
      );
    }
    await s.settled();
    expect(s.streams.clients).toBe(0);
    expect(s.streams.watcherStats()).toEqual({ sessions: 0, wakes: 0, listening: false, polling: false });
    const started = setSpy.mock.calls.length;
    setSpy.mockRestore();
    clearSpy.mockRestore();
    expect(listeners()).toBe(baseline);
    expect(started).toBeGreaterThanOrEqual(1000); // one heartbeat per stream at least: the count is not vacuous
    expect(intervals.size).toBe(0);
    await s.close();
    own.store.close();
  }, 60_000);

  it(
    'a client that never reads: the host stops reading at ' + 'the buffer bound and drops it after the stall timeout',
    async () => {
      const own = tempStore();
      const bound = 256 * 1024;
      const stallMs = 300;
      let stalled!: () => void;
      const stall = new Promise<void>((resolve) => (stalled = resolve));
      const s = await streamServer(own.store, { maxBufferedBytes: bound, stallMs, onStreamEnd: () => stalled() });
      const sessionId = own.store.ensureSession('default', 'b', 'slow').sessionId;
      const served = new Promise<import('node:http').ServerResponse>((resolve) =>
        s.server.once('request', (_req, res) => resolve(res)),
      );
      const socket = connect(Number(new URL(s.url('/')).port), '127.0.0.1');
      socket.write(`GET /sessions/${sessionId}/events HTTP/1.1\r\nhost: x\r\n\r\n`);
      socket.pause(); // never reads: the kernel buffers fill, then the host's
      const socketClosed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
      socket.on('error', () => undefined);
      const res = await served;
      const text = 'y'.repeat(16 * 1024);
      let maxBuffered = 0;
      const started = Date.now();
      // 48 MiB of events, far beyond what loopback's kernel buffers take.
      for (let i = 0; i < 3000; i++) {
        own.store.append(sessionId, [delta(null, text, i + 1)]);
        if (i % 20 === 0) await new Promise((r) => setImmediate(r));
        maxBuffered = Math.max(maxBuffered, res.writableLength);
      }
      await stall;
      const waited = Date.now() - started;
      socket.resume(); // now it reads: what was in flight, then the end the host sent
      await socketClosed;
      expect(maxBuffered).toBeGreaterThan(bound); // it did reach the bound…
      expect(maxBuffered).toBeLessThan(bound + 17 * 1024); // …and went over by one message at most
      expect(res.socket?.bytesWritten ?? 0).toBeLessThan(3000 * text.length); // it stopped reading the store
      expect(waited).toBeGreaterThanOrEqual(stallMs);
      expect(res.destroyed).toBe(true);
      expect(s.streams.clients).toBe(0);
      await s.close();
      own.store.close();
    },
    60_000,
  );
});
