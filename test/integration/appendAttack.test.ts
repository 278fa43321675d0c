// An outside attack on steering `append`, kept as tests: a hostile runner (raw protocol, fixture hostile-append) and
// racing dispatches.
// Promises checked (docs/protocol.md "Messages during a run", docs/approvals.md §7): a message not accepted runs as an
// ordinary queued run (nothing lost), an invalid answer fails the run, an accepted message is recorded once and
// redacted, one message of a session is decided at a time, dedupe holds across append and queue.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { filesContaining } from '../helpers/canary.js';
import { chatEvent, tempHost } from '../helpers/host.js';
import { rawDb } from '../helpers/rawDb.js';
import { rendezvous } from '../helpers/rendezvous.js';
import { appendRuns } from '../helpers/appendRuns.js';

const CANARY = 'canary-append-secret-9a8b7c6d5e';
const rv = rendezvous(mkdtempSync(join(tmpdir(), 'paddock-append-attack-')));
const host = tempHost({ maxConcurrentRuns: 4, limits: { maxChatEventBytes: 1024 * 1024 } });
const binding = (id: string, runner: string, config: Record<string, unknown> = {}) => ({
  id,
  runner,
  route: { bot: id },
  sandbox: 'process',
  steering: 'append',
  config: { socket: rv.path, ...config },
  limits: { wallClockMs: 60_000 },
});
beforeAll(() => {
  process.env.PADDOCK_APPEND_CANARY_KEY = CANARY;
  host.apply({
    resources: {
      models: [{ id: 'keyed', provider: 'anthropic', model: 'm', apiKey: { env: 'PADDOCK_APPEND_CANARY_KEY' } }],
    },
    bindings: [
      binding('ignore', 'hostile-append', { mode: 'ignore' }),
      binding('echo', 'hostile-append', { mode: 'echo' }),
      binding('twice', 'hostile-append', { mode: 'twice' }),
      binding('garbage', 'hostile-append', { mode: 'garbage' }),
      binding('never', 'hostile-append', { mode: 'never' }),
      binding('crash', 'hostile-append', { mode: 'crash' }),
      binding('flood', 'hostile-append', { mode: 'flood' }),
      binding('refuses', 'takes-appended-messages', { mode: 'refuse' }),
    ],
  });
});
afterAll(async () => {
  rv.close();
  await host.close();
});

const { send, running, outputOf } = appendRuns(host.dispatcher, rv);

describe('append: hostile answers', () => {
  it('an accepted message the runner ignores: recorded appended, one run (the host cannot know)', async () => {
    const first = await running('ignore', 'one', 'i1');
    const second = await send('ignore', 'two', 'i1');
    expect(second.status).toBe('appended');
    rv.go(first.runId);
    const outcome = await first.done;
    expect(outputOf(outcome)).toBe('done: one');
    expect(host.store.runs({ sessionId: first.sessionId }).length).toBe(1);
  });

  it('an answer given twice (accepted, then refused) and a stray answer: one decision, no second run', async () => {
    const first = await running('twice', 'one', 't1');
    const second = await send('twice', 'two', 't1');
    rv.go(first.runId);
    expect((await first.done).status).toBe('completed');
    // The first answer stands: appended, one run, the message recorded once.
    expect(second.status).toBe('appended');
    expect(host.store.runs({ sessionId: first.sessionId })).toHaveLength(1);
    const received = host.store.readEvents(first.sessionId).filter((e) => e.type === 'message.received');
    expect(received).toHaveLength(2); // the run's own message, and the appended one: once
  });

  it('a garbage answer fails the run (protocol violation) and the message still runs (not lost)', async () => {
    const first = await running('garbage', 'one', 'g1');
    const second = await send('garbage', 'two', 'g1');
    expect(second.status).toBe('queued');
    expect(second.notAppended?.code).toBe('refused');
    const outcome = await first.done;
    expect(outcome.status).toBe('protocol_error');
    await rv.arrived(second.runId);
    rv.go(second.runId);
    const o2 = await second.done;
    // The second run's runner is the same garbage runner; it completes because no message was sent to it.
    expect(outputOf(o2)).toBe('done: two');
  });

  it('no answer: after 10 s the message is queued and runs next', async () => {
    const first = await running('never', 'one', 'nv1');
    const t0 = Date.now();
    const second = await send('never', 'two', 'nv1');
    const waited = Date.now() - t0;
    expect(second.status).toBe('queued');
    expect(waited).toBeGreaterThanOrEqual(9_000);
    rv.go(first.runId);
    // The runner saw it (documented: it may see it twice).
    expect(outputOf(await first.done)).toBe('done: one + two');
    await rv.arrived(second.runId);
    rv.go(second.runId);
    expect(outputOf(await second.done)).toBe('done: two');
  });

  it('accepted, then the runner crashes: appended, and the crashed run is its answer (protocol.md 6.)', async () => {
    const first = await running('crash', 'one', 'cr1');
    const second = await send('crash', 'two', 'cr1');
    const outcome = await first.done;
    const runs = host.store.runs({ sessionId: first.sessionId });
    // The runner's word is trusted (protocol: accepted => its result accounts for it); a crash after accepting
    // loses the message with the run, which is reported crashed. Observed and pinned here.
    expect(second.status).toBe('appended');
    expect(outcome.status).toBe('crashed');
    expect(runs.length).toBe(1);
  });

  it('2000 stray answers after an accepted one: the host stays up and the run is decided', async () => {
    const first = await running('flood', 'one', 'fl1');
    expect((await send('flood', 'two', 'fl1')).status).toBe('appended');
    rv.go(first.runId);
    const outcome = await first.done;
    expect(['completed', 'protocol_error']).toContain(outcome.status);
  });
});

describe('append: dedupe and ordering under concurrency', () => {
  it('one event id dispatched 5 times at once while the run runs: appended once, the rest duplicates', async () => {
    const first = await running('echo', 'one', 'd1');
    const id = `dup-${Date.now()}`;
    const tickets = await Promise.all(
      Array.from({ length: 5 }, () =>
        host.dispatcher.dispatch(chatEvent({ bot: 'echo', text: 'two', conversation: { id: 'd1' }, id })),
      ),
    );
    const statuses = tickets.map((t) => t.status).sort();
    expect(statuses).toEqual(['appended', 'duplicate', 'duplicate', 'duplicate', 'duplicate']);
    rv.go(first.runId);
    expect(outputOf(await first.done)).toBe('done: one + two');
    expect(host.store.runs({ sessionId: first.sessionId }).length).toBe(1);
    const received = host.store.readEvents(first.sessionId).filter((e) => e.type === 'message.received');
    expect(received.length).toBe(2); // the run's own message + the appended one
  });

  it('the same event id to a refusing runner at once: queued once, never twice', async () => {
    const first = await running('refuses', 'one', 'd2');
    const id = `dup2-${Date.now()}`;
    const tickets = await Promise.all(
      Array.from({ length: 4 }, () =>
        host.dispatcher.dispatch(chatEvent({ bot: 'refuses', text: 'two', conversation: { id: 'd2' }, id })),
      ),
    );
    expect(tickets.filter((t) => t.status === 'queued').length).toBe(1);
    expect(tickets.filter((t) => t.status === 'duplicate').length).toBe(3);
    rv.go(first.runId);
    await first.done;
    const q = tickets.find((t) => t.status === 'queued');
    if (q?.status !== 'queued') throw new Error('no queued ticket');
    await rv.arrived(q.runId);
    rv.go(q.runId);
    await q.done;
    expect(host.store.runs({ sessionId: first.sessionId }).length).toBe(2);
  });

  it('many messages at once: each appended, in dispatch order, none lost', async () => {
    const first = await running('echo', 'zero', 'o1');
    const tickets = await Promise.all(Array.from({ length: 20 }, (_, i) => send('echo', `m${i}`, 'o1')));
    expect(tickets.every((t) => t.status === 'appended')).toBe(true);
    rv.go(first.runId);
    expect(outputOf(await first.done)).toBe(
      ['done: zero', ...Array.from({ length: 20 }, (_, i) => `m${i}`)].join(' + '),
    );
  });
});

describe('append: secrets', () => {
  it('a configured secret in an appended message is in no stored byte (data folder, SQLite)', async () => {
    const first = await running('echo', 'one', 's1');
    expect((await send('echo', `token ${CANARY} end`, 's1')).status).toBe('appended');
    const refused = await running('refuses', 'one', 's2');
    const q = await send('refuses', `queued ${CANARY} end`, 's2');
    expect(q.status).toBe('queued');
    rv.go(first.runId);
    await first.done;
    rv.go(refused.runId);
    await refused.done;
    await rv.arrived(q.runId);
    rv.go(q.runId);
    await q.done;
    const db = rawDb(host.store);
    db.pragma('wal_checkpoint(TRUNCATE)');
    expect(filesContaining(host.dataDir, CANARY)).toEqual([]);
  });
});
