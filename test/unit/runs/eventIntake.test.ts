// The chat event intake (host/runs/eventIntake.ts, issue 12 finding 9): one size limit
// (limits.maxChatEventBytes) for dispatch and ad-hoc runs, checked in bytes before the shape and
// before anything is stored. Real host, real store; a small limit so the boundary is cheap to reach.
import { afterAll, describe, expect, it } from 'vitest';
import { HostError } from '../../../host/errors.js';
import { takeChatEvent } from '../../../host/runs/eventIntake.js';
import { chatEvent, tempHost } from '../../helpers/host.js';

const LIMIT = 4_096;
const host = tempHost({ limits: { maxChatEventBytes: LIMIT } });
afterAll(() => host.close());
host.apply({ bindings: [{ id: 'echo', runner: 'echo', sandbox: 'process', route: { bot: 'echo' } }] });

/** A chat event whose JSON is exactly `bytes` long, padded with `pad` (1- or 2-byte characters). */
function eventOf(bytes: number, pad: 'a' | 'é', id = `evt-${bytes}-${pad}`) {
  const base = chatEvent({ bot: 'echo', text: '' });
  const size = (text: string) =>
    Buffer.byteLength(JSON.stringify({ ...base, id, message: { parts: [{ type: 'text', text }] } }));
  const room = bytes - size('');
  const text = pad === 'a' ? 'a'.repeat(room) : 'é'.repeat(Math.floor(room / 2)) + 'a'.repeat(room % 2);
  const event = { ...base, id, message: { parts: [{ type: 'text' as const, text }] } };
  expect(Buffer.byteLength(JSON.stringify(event))).toBe(bytes);
  return event;
}

const refusal = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return undefined;
};

describe('takeChatEvent', () => {
  it.each([['a'], ['é']] as const)('%s padding: exactly the limit passes, one byte more is refused in bytes', (pad) => {
    expect(takeChatEvent(eventOf(LIMIT, pad), { maxChatEventBytes: LIMIT }).id).toBe(`evt-${LIMIT}-${pad}`);
    const error = refusal(() => takeChatEvent(eventOf(LIMIT + 1, pad), { maxChatEventBytes: LIMIT }));
    expect(error).toBeInstanceOf(HostError);
    expect((error as HostError).code).toBe('INVALID_INPUT');
    expect((error as HostError).message).toBe(
      `event is ${LIMIT + 1} bytes; the host takes at most ${LIMIT} bytes (limits.maxChatEventBytes)`,
    );
    expect((error as HostError).data).toMatchObject({ reason: 'event_too_large', limit: 'maxChatEventBytes' });
  });

  it('the size is checked before the shape: an oversized invalid event is refused for its size', () => {
    const error = refusal(() => takeChatEvent({ junk: 'x'.repeat(LIMIT) }, { maxChatEventBytes: LIMIT }));
    expect((error as HostError).data).toMatchObject({ reason: 'event_too_large' });
    const small = refusal(() => takeChatEvent({ junk: 'x' }, { maxChatEventBytes: LIMIT }));
    expect((small as HostError).data).toMatchObject({ reason: 'invalid_event' });
  });

  it('the host limit cannot be raised past what a runner reads in one line (8 MiB)', async () => {
    const { parseLimits } = await import('../../../host/config/limits.js');
    expect(parseLimits({}).maxChatEventBytes).toBe(1024 * 1024);
    expect(() => parseLimits({ maxChatEventBytes: 8 * 1024 * 1024 + 1 })).toThrow(/maxChatEventBytes/);
    expect(() => parseLimits({ wallClockMs: 2 ** 31 })).toThrow(/wallClockMs/);
  });
});

describe('both intake paths use it, before anything is stored', () => {
  const stored = () => JSON.stringify(host.store.runs({})) + JSON.stringify(host.store.audit.records());

  it('dispatch: at the limit it runs; one byte over is refused (audited, clipped) and nothing is queued', async () => {
    const ok = await host.dispatcher.dispatch(eventOf(LIMIT, 'é', 'dispatch-ok'));
    if (ok.status === 'duplicate') throw new Error('duplicate');
    expect((await ok.done).status).toBe('completed');
    const before = host.store.runs({}).length;
    const big = { ...eventOf(LIMIT + 1, 'a', 'dispatch-big'), platform: 'p'.repeat(3_000) };
    await expect(host.dispatcher.dispatch(big)).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      data: { reason: 'event_too_large' },
    });
    expect(host.store.runs({}).length).toBe(before);
    const record = host.store.audit.records().find((r) => r.type === 'dispatch.refused')!;
    expect(record.data).toMatchObject({ reason: 'event_too_large', eventId: 'dispatch-big' });
    // The refused event's own strings are clipped in its audit record.
    expect(stored()).not.toContain('p'.repeat(200));
  }, 60_000);

  it('ad hoc (`paddock run`): the same limit, refused before a session or a run exists', async () => {
    const sessions = host.store.runs({}).length;
    await expect(
      host.runs.runAdHoc({ runner: 'echo', event: eventOf(LIMIT + 1, 'é', 'adhoc-big') as never }),
    ).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      data: { reason: 'event_too_large', bytes: LIMIT + 1, maxBytes: LIMIT },
    });
    expect(host.store.runs({}).length).toBe(sessions);
    const outcome = await host.runs.runAdHoc({ runner: 'echo', event: eventOf(LIMIT, 'a', 'adhoc-ok') as never });
    expect(outcome.status, outcome.reason).toBe('completed');
  }, 60_000);
});
