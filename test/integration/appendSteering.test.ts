// Steering `append` end to end (real store, real runner processes over the protocol): a message that arrives during a
// run goes to the running runner when it takes it, and otherwise becomes an ordinary queued run — never lost.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { HostError } from '../../host/errors.js';
import { chatEvent, tempHost } from '../helpers/host.js';
import { rendezvous } from '../helpers/rendezvous.js';
import { appendRuns } from '../helpers/appendRuns.js';

const rv = rendezvous(mkdtempSync(join(tmpdir(), 'paddock-append-')));
const host = tempHost({ maxConcurrentRuns: 4, limits: { maxChatEventBytes: 1024 * 1024 } });
// The rendezvous socket lives on the host, so these bindings use the process backend.
const binding = (id: string, runner: string, config: Record<string, unknown> = {}) => ({
  id,
  runner,
  route: { bot: id },
  sandbox: 'process',
  steering: 'append',
  config: { socket: rv.path, ...config },
  limits: { wallClockMs: 30_000 },
});
host.apply({
  bindings: [
    binding('takes', 'takes-appended-messages', { mode: 'take' }),
    binding('refuses', 'takes-appended-messages', { mode: 'refuse' }),
    binding('ends-first', 'takes-appended-messages', { mode: 'end-first' }),
    binding('no-append', 'waits-for-go'),
  ],
});
afterAll(async () => {
  rv.close();
  await host.close();
});

const { send, running, outputOf } = appendRuns(host.dispatcher, rv);

describe('steering append (real runner processes)', () => {
  it('the running SDK runner takes the message: the ticket says appended, the run answers both', async () => {
    const first = await running('takes', 'fix the bug', 'a1');
    const second = await send('takes', 'and add a test', 'a1');
    expect(second).toMatchObject({ status: 'appended', runId: first.runId, sessionId: first.sessionId });
    rv.go(first.runId);
    const outcome = await first.done;
    expect(outcome.status, outcome.reason).toBe('completed');
    expect(outputOf(outcome)).toBe('done: fix the bug + and add a test (14 bytes)');
    const events = host.store.readEvents(first.sessionId);
    const appended = events.find((e) => e.type === 'message.received' && e.runId === first.runId)!;
    expect(appended.data).toMatchObject({ appended: { goalRevision: 0 } });
    // Recorded before the run ended, inside it: between its start and its end.
    const seqOf = (type: string) => events.find((e) => e.type === type && e.runId === first.runId)!.seq;
    expect(appended.seq).toBeGreaterThan(seqOf('run.started'));
    expect(appended.seq).toBeLessThan(seqOf('run.ended'));
    expect(host.store.runs({ sessionId: first.sessionId }).length).toBe(1);
    expect((await second.done).runId).toBe(first.runId);
  });

  it('a runner without the capability: the message is queued and runs next (unsupported)', async () => {
    const first = await running('no-append', 'one', 'n1');
    const second = await send('no-append', 'two', 'n1');
    expect(second).toMatchObject({ status: 'queued', position: 1, notAppended: { code: 'unsupported' } });
    rv.go(first.runId);
    await rv.arrived(second.runId);
    rv.go(second.runId);
    expect(outputOf(await second.done)).toBe('done: two');
  });

  it('a runner that refuses: the message is queued and runs after the first run', async () => {
    const first = await running('refuses', 'one', 'r1');
    const second = await send('refuses', 'two', 'r1');
    expect(second.status).toBe('queued');
    expect(second.notAppended).toEqual({
      code: 'refused',
      message: `run ${first.runId} did not take it: the runner refused the message`,
    });
    rv.go(first.runId);
    expect(outputOf(await first.done)).toBe('done: one');
    await rv.arrived(second.runId);
    rv.go(second.runId);
    expect(outputOf(await second.done)).toBe('done: two');
  });

  it('the run ends before it took the message: the message becomes a run of its own, not lost', async () => {
    const first = await running('ends-first', 'one', 'e1');
    const second = await send('ends-first', 'two', 'e1');
    expect(second.status).not.toBe('appended');
    expect(second.notAppended?.code).toBe('refused');
    expect(second.notAppended?.message).toMatch(/the run ended before it took the message/);
    expect(outputOf(await first.done)).toBe('done: one');
    await rv.arrived(second.runId);
    rv.go(second.runId);
    expect(outputOf(await second.done)).toBe('done: two');
  });

  it('a big message within the intake limit is delivered whole; one over it is refused; the run is fine', async () => {
    const first = await running('takes', 'big', 'b1');
    const big = 'x'.repeat(900 * 1024);
    expect((await send('takes', big, 'b1')).status).toBe('appended');
    const error = (await host.dispatcher
      .dispatch(chatEvent({ bot: 'takes', text: 'y'.repeat(2 * 1024 * 1024), conversation: { id: 'b1' } }))
      .catch((e: unknown) => e)) as HostError;
    expect(error.data.reason).toBe('event_too_large');
    rv.go(first.runId);
    const outcome = await first.done;
    expect(outcome.status, outcome.reason).toBe('completed');
    expect(outputOf(outcome)).toContain(`(${900 * 1024} bytes)`);
    expect(host.store.runs({ sessionId: first.sessionId }).length).toBe(1);
  });
});
