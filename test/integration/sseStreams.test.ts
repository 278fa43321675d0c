// SSE streams of real runs: a fixture runner dispatched through the real Dispatcher in this process, and
// `paddock dispatch` in another process on the same data folder (reaching this process's streams through
// SQLite's data_version). The client is a real HTTP client on loopback; it must see exactly what was stored.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Store } from '../../host/state/store.js';
import { paddock } from '../helpers/cli.js';
import { chatEvent, FIXTURE_RUNNERS, tempHost } from '../helpers/host.js';
import type { StoredEvent } from '../../host/state/events.js';
import { openSse } from '../helpers/sse.js';
import { streamServer } from '../helpers/streamServer.js';

const HOSTILE = [
  'plain ',
  '\n\ndata: forged\n\n',
  '\r\rid: 424242\revent: run.ended\r\r',
  '\r\n\r\ndata: {"forged":true}\r\n\r\n',
  'line\u2028sep\u2029para',
  `${'w'.repeat(512 * 1024)}\n`,
];

/**
 * A run stream's events: the run's, up to and including its terminal event. The host records the run's
 * workspace clean-up (effect.intent / effect.result) after `run.ended`; those reach the session stream only.
 */
const runStreamOf = (events: StoredEvent[], runId: string) => {
  const ofRun = events.filter((e) => e.runId === runId);
  return ofRun.slice(0, ofRun.findIndex((e) => e.type === 'run.ended' || e.type === 'run.interrupted') + 1);
};

const host = tempHost();
host.apply({
  bindings: [
    {
      id: 'streamed',
      runner: 'streams-given-deltas',
      sandbox: 'process',
      route: { platform: 'telegram', bot: 'streamed' },
      config: { deltas: HOSTILE, repeat: 50 },
    },
  ],
});
const srv = await streamServer(host.store);
afterAll(async () => {
  await srv.close();
  await host.close();
});

describe('SSE streams of real runs', () => {
  it(
    "a dispatched run's stream carries its updates as " + 'stored, hostile text included, and ends after run.ended',
    async () => {
      const ticket = await host.dispatcher.dispatch(chatEvent({ bot: 'streamed', text: 'hello\n\ndata: forged' }));
      if (ticket.status === 'duplicate') throw new Error('unexpected duplicate');
      const run = await openSse(srv.url(`/runs/${ticket.runId}/events`));
      const session = await openSse(srv.url(`/sessions/${ticket.sessionId}/events`));
      expect((await ticket.done).status).toBe('completed');
      expect(await run.closed).toBe('end');
      const stored = host.store.readEvents(ticket.sessionId);
      const ofRun = runStreamOf(stored, ticket.runId);
      expect(ofRun.length).toBeGreaterThan(HOSTILE.length + 50);
      expect(run.messages.map((m) => JSON.parse(m.data) as unknown)).toEqual(ofRun);
      expect(run.messages.every((m) => m.fields.join() === 'id,event,data')).toBe(true);
      const events = run.messages.map((m) => m.event);
      expect(events[0]).toBe('run.queued');
      expect(events.at(-1)).toBe('run.ended');
      // The host re-cuts deltas (its redactor holds text back across them): compare each message's whole text.
      const texts = new Map<string, string>();
      for (const m of run.messages) {
        const e = JSON.parse(m.data) as StoredEvent<'run.update'>;
        const u =
          e.type === 'run.update' ? (e.data.update as { kind: string; messageId?: string; text?: string }) : undefined;
        if (u?.kind === 'message.delta') texts.set(u.messageId!, (texts.get(u.messageId!) ?? '') + u.text);
      }
      expect(texts.get('m1')).toBe(HOSTILE.join(''));
      expect(texts.get('m2')).toBe('hello\n\ndata: forged'.repeat(50));
      // The session stream has the message too, and stays open after the run.
      await session.waitForCount(stored.length);
      expect(session.messages.map((m) => JSON.parse(m.data) as unknown)).toEqual(stored);
      expect(session.messages.find((m) => m.event === 'message.received')).toBeDefined();
      session.destroy();
    },
  );

  it(
    'a run dispatched by `paddock dispatch` in another ' + 'process reaches the session stream and its run stream',
    async () => {
      const env = { PADDOCK_RUNNER_DIRS: FIXTURE_RUNNERS };
      const { dataDir } = tempHost(); // only its fresh data folder: this test's host is the CLI, plus a store here
      const file = join(dataDir, 'paddock.yaml');
      writeFileSync(
        file,
        'bindings:\n  - { id: cli, runner: streams-given-deltas, sandbox: process, route: { platform: telegram, ' +
          "bot: cli }, config: { deltas: ['\\n\\ndata: forged', 'two'] } }\n",
      );
      expect((await paddock(['apply', '-f', file], { dataDir, env })).exitCode).toBe(0);
      const dispatch = (text: string) =>
        paddock(['dispatch', '-f', '-', '--json'], {
          dataDir,
          env,
          input: JSON.stringify(chatEvent({ bot: 'cli', conversation: { id: 'cross' }, text })),
        });
      const first = await dispatch('first');
      expect(first.exitCode, first.stderr).toBe(0);

      const store = Store.open({ dataDir });
      const own = await streamServer(store);
      try {
        const sessionId = store.runs({ bindingId: 'cli' })[0]!.sessionId;
        const before = store.readEvents(sessionId).at(-1)!.seq;
        const stream = await openSse(own.url(`/sessions/${sessionId}/events?after=${before}`));
        // This process commits nothing from here on: everything the stream gets comes from the other process.
        const second = await dispatch('second');
        expect(second.exitCode, second.stderr).toBe(0);
        const added = store.readEvents(sessionId, before);
        expect(added.map((e) => e.type)).toContain('run.ended');
        await stream.waitForCount(added.length);
        expect(stream.messages.map((m) => JSON.parse(m.data) as unknown)).toEqual(added);
        const runId = added.find((e) => e.type === 'run.ended')!.runId!;
        const replay = await openSse(own.url(`/runs/${runId}/events`));
        expect(await replay.closed).toBe('end');
        expect(replay.messages.map((m) => JSON.parse(m.data) as unknown)).toEqual(runStreamOf(added, runId));
        stream.destroy();
      } finally {
        await own.close();
        store.close();
      }
    },
  );
});
