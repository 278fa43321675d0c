// examples/bot-client against a real `paddock serve` child: dispatch, a run's stream through a proxy that drops the
// connection (between messages and in the middle of one) — every event arrives once, in order —, cancel, 429 with
// Retry-After, and problem+json refusals.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PaddockClient, PaddockError, type ChatEvent, type PaddockEvent } from '../../examples/bot-client/client.js';
import { Reply } from '../../examples/bot-client/reply.js';
import { SseParser } from '../../examples/bot-client/sse.js';
import { cuedServe, type CuedServe } from '../helpers/cuedServe.js';
import { cuttingProxy, type CuttingProxy } from '../helpers/cuttingProxy.js';
import { openSse } from '../helpers/sse.js';

let served: CuedServe;
let proxy: CuttingProxy;
let token = '';

beforeAll(async () => {
  served = await cuedServe([{ id: 'cue' }, { id: 'cue-queued', maxQueued: 1 }]);
  token = await served.token('default', 'platform');
  proxy = await cuttingProxy(served.server.url);
}, 120_000);
afterAll(async () => {
  await proxy.close();
  const code = await served.stop();
  expect(code, served.server.stderr().slice(-3000)).toBe(0);
});

let n = 0;
const event = (bot: string, text: string, conversation = `c${++n}`): ChatEvent => ({
  id: `evt-${n}-${text}`,
  platform: 'telegram',
  bot,
  conversation: { type: 'private', id: conversation },
  sender: { id: 'u1' },
  message: { parts: [{ type: 'text', text }] },
  receivedAt: new Date().toISOString(),
});

/** Consume a stream in the background; `until(p)` resolves once an event matching `p` was yielded. */
function collect(stream: AsyncGenerator<PaddockEvent>) {
  const events: PaddockEvent[] = [];
  const waiters: { p: (e: PaddockEvent) => boolean; resolve: () => void }[] = [];
  const done = (async () => {
    for await (const e of stream) {
      events.push(e);
      for (const w of waiters.filter((x) => x.p(e))) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  })();
  return {
    events,
    done,
    until: (p: (e: PaddockEvent) => boolean) =>
      new Promise<void>((resolve) => (events.some(p) ? resolve() : waiters.push({ p, resolve }))),
  };
}
const says = (text: string) => (e: PaddockEvent) =>
  e.type === 'run.update' && JSON.stringify((e.data.update as { parts?: unknown }).parts ?? '').includes(text);

/** The run's whole stream straight from the server (no proxy): what the client must have yielded. */
async function truth(runId: string): Promise<number[]> {
  const sse = await openSse(`${served.server.url}/v1/runs/${runId}/events`, {
    headers: { authorization: `Bearer ${token}` },
  });
  expect(await sse.closed).toBe('end');
  return sse.messages.map((m) => Number(m.id));
}

describe('examples/bot-client', () => {
  it('streams a live run through dropped connections (between, inside a message): each event once', async () => {
    const client = new PaddockClient({ baseUrl: proxy.url, token, maxReconnectDelayMs: 500 });
    const run = await client.dispatch(event('cue', 'tell me three things'));
    expect(run).toMatchObject({ status: 'started', bindingId: 'cue' });
    const cued = await served.cues.next();
    expect(cued).toMatchObject({ runId: run.runId, text: 'tell me three things' });
    const stream = collect(client.stream({ runId: run.runId }));

    cued.say('one');
    await stream.until(says('one'));
    const before = proxy.connections.length;
    proxy.cutAll(); // the network drops while the stream waits for the next event
    cued.say('two');
    await stream.until(says('two'));
    // Half of the next message reaches the client, then the connection breaks in the middle of it.
    proxy.cutAfter(40);
    cued.say('three, a message long enough to be cut in the middle of its data line');
    await stream.until(says('three'));
    cued.end();
    await stream.done;

    const seqs = stream.events.map((e) => e.seq);
    expect(seqs).toEqual(await truth(run.runId)); // every stored event of the run, once, in order
    expect(stream.events.at(-1)).toMatchObject({ type: 'run.ended', data: { status: 'completed' } });
    const reply = new Reply();
    for (const e of stream.events) reply.take(e);
    expect(reply.text).toBe('one\n\ntwo\n\nthree, a message long enough to be cut in the middle of its data line');
    // It really reconnected, each time asking for what follows the last event it had yielded.
    const resumes = proxy.connections
      .slice(before)
      .map((c) => /last-event-id: (\d+)/i.exec(c.request)?.[1])
      .filter(Boolean)
      .map(Number);
    expect(resumes.length).toBeGreaterThanOrEqual(2);
    // One connection really ended inside a message (its data line half sent).
    expect(proxy.connections.some((c) => /\ndata: [^\n]+$/.test(c.response))).toBe(true);
    for (const seq of resumes) expect(seqs).toContain(seq);
    expect(resumes).toEqual([...resumes].sort((a, b) => a - b));
  });

  it("replays an ended run's stream from a seq, and a reply made of deltas folds like the CLI's", async () => {
    const client = new PaddockClient({ baseUrl: served.server.url, token });
    const run = await client.dispatch(event('cue', 'replay me'));
    const cued = await served.cues.next();
    cued.say('alpha');
    cued.say('beta');
    cued.end();
    const all: PaddockEvent[] = [];
    for await (const e of client.stream({ runId: run.runId })) all.push(e);
    const rest: number[] = [];
    for await (const e of client.stream({ runId: run.runId }, { after: all[1]!.seq })) rest.push(e.seq);
    expect(rest).toEqual(all.slice(2).map((e) => e.seq));
    // The session stream stays open: leaving the loop closes it.
    const session: string[] = [];
    for await (const e of client.stream({ sessionId: run.sessionId })) {
      session.push(e.type);
      if (e.type === 'run.ended') break;
    }
    expect(session).toContain('message.received');
    expect(session.at(-1)).toBe('run.ended');
    // …and so does aborting its signal: the loop ends, nothing is thrown.
    const stop = new AbortController();
    const seen: string[] = [];
    for await (const e of client.stream({ sessionId: run.sessionId }, { signal: stop.signal })) {
      seen.push(e.type);
      if (e.type === 'run.ended') stop.abort();
    }
    expect(seen).toContain('run.ended');

    // Delta folding: the same message id continues; another message starts after a blank line; a whole message
    // never continues; tool and user text is not reply text.
    const reply = new Reply();
    const update = (update: Record<string, unknown>, seq: number): PaddockEvent => ({
      id: `e${seq}`,
      sessionId: 's',
      seq,
      type: 'run.update',
      at: '',
      data: { update },
    });
    [
      { kind: 'message.delta', messageId: 'm1', text: 'Hel' },
      { kind: 'message.delta', messageId: 'm1', text: 'lo' },
      { kind: 'tool.started', toolCallId: 't', name: 'x' },
      { kind: 'message', role: 'user', parts: [{ type: 'text', text: 'not me' }] },
      { kind: 'message.delta', messageId: 'm2', text: 'there' },
      { kind: 'message', parts: [{ type: 'text', text: 'whole' }] },
      { kind: 'message.delta', text: 'after' },
    ].forEach((u, i) => reply.take(update(u, i + 1)));
    expect(reply.text).toBe('Hello\n\nthere\n\nwhole\n\nafter');
  });

  it('cancels a running run (it ends cancelled); a second cancel is a conflict problem', async () => {
    const client = new PaddockClient({ baseUrl: served.server.url, token });
    const run = await client.dispatch(event('cue', 'cancel me'));
    await served.cues.next();
    expect(await client.cancel(run.runId, 'the user said stop')).toEqual({ runId: run.runId, requested: true });
    const reply = new Reply();
    for await (const e of client.stream({ runId: run.runId })) reply.take(e);
    expect(reply.outcome?.status).toBe('cancelled');
    const again = await client.cancel(run.runId).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(PaddockError);
    expect(again).toMatchObject({ status: 409, code: 'conflict', problem: { runStatus: 'cancelled' } });
  });

  it('waits out a 429 (Retry-After) and tries again; gives up with the problem after its retries', async () => {
    const client = new PaddockClient({ baseUrl: proxy.url, token, retries: 1 });
    const first = await client.dispatch(event('cue-queued', 'first', 'busy'));
    const running = await served.cues.next();
    expect((await client.dispatch(event('cue-queued', 'second', 'busy'))).status).toBe('queued');
    // The queue is full: the third is refused 429 queue_full with Retry-After: 1. While the client waits, the
    // running run ends and the second starts, so the retry finds room.
    const postsSoFar = () => proxy.connections.flatMap((c) => c.request.match(/POST \/v1\/events HTTP/g) ?? []).length;
    const marker = postsSoFar();
    const third = client.dispatch(event('cue-queued', 'third', 'busy'));
    await proxy.waitForResponse(/^HTTP\/1\.1 429 [\s\S]*?^retry-after: 1\r$/im);
    running.end();
    const second = await served.cues.next();
    expect(await third).toMatchObject({ status: 'queued', sessionId: first.sessionId });
    expect(postsSoFar() - marker).toBe(2); // the refused attempt and its retry

    // Still full after the retry: the refusal, with its problem.
    const refused = await client.dispatch(event('cue-queued', 'fourth', 'busy')).catch((e: unknown) => e);
    expect(refused).toMatchObject({ status: 429, code: 'queue_full' });
    second.end();
    (await served.cues.next()).end();
  });

  it('refusals are PaddockErrors with the problem code: no binding, a bad token, an unknown run', async () => {
    const client = new PaddockClient({ baseUrl: served.server.url, token });
    await expect(client.dispatch(event('nobody', 'hi'))).rejects.toMatchObject({ status: 422, code: 'no_binding' });
    const stranger = new PaddockClient({ baseUrl: served.server.url, token: `${token}x` });
    await expect(stranger.dispatch(event('cue', 'hi'))).rejects.toMatchObject({ status: 401, code: 'unauthorized' });
    // A stream of a run that does not exist is refused at once, not reconnected forever.
    const stream = client.stream({ runId: 'run_nope' });
    await expect(stream.next()).rejects.toMatchObject({ status: 404, code: 'not_found' });
  });

  it('parses SSE by the rules: CR, LF and CRLF line ends, comments, multi-line data, a chunk cut anywhere', () => {
    const text = ': hb\r\nid: 7\revent: run.update\ndata: {"a":\r\ndata: 1}\n\nid: 8\ndata:x\n\n';
    const expected = [
      { id: '7', event: 'run.update', data: '{"a":\n1}' },
      { id: '8', event: 'message', data: 'x' },
    ];
    expect(new SseParser().feed(text)).toEqual(expected);
    for (let cut = 0; cut <= text.length; cut++) {
      const parser = new SseParser();
      expect([...parser.feed(text.slice(0, cut)), ...parser.feed(text.slice(cut))]).toEqual(expected);
    }
  });
});
