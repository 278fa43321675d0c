// `run/message` on the runner side (sdk/runner/serve.ts, messageSlot.ts): what the SDK answers the host, on the wire.
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { defineRunner, eventText, type MessageHandler } from '../../../sdk/index.js';
import { buildRunParams, textEvent } from '../../../sdk/protocol/runParams.js';
import { inProcessRunner } from '../../../sdk/testing/transports.js';

/** A runner whose run waits for the test's `release`, with the message handler the test gives (if any). */
function runnerWith(handler: ((taken: string[]) => MessageHandler) | undefined, append = true) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const runner = defineRunner({
    manifest: { name: 'takes-messages', version: '0.0.0', append },
    async run(event, _binding, ctx) {
      const taken: string[] = [];
      if (handler) ctx.onMessage(handler(taken));
      await released;
      return [eventText(event), ...taken].join(' + ');
    },
  });
  return { runner, release: () => release() };
}

/** Talk JSON-RPC lines to an in-process runner: `call` resolves with the answer to that id. */
function wire(runner: ReturnType<typeof runnerWith>['runner']) {
  const t = inProcessRunner(runner);
  const answers = new Map<number, (msg: Record<string, unknown>) => void>();
  createInterface({ input: t.output }).on('line', (line) => {
    const msg = JSON.parse(line) as Record<string, unknown>;
    if (typeof msg.id === 'number') answers.get(msg.id)?.(msg);
  });
  let id = 0;
  const call = (method: string, params: unknown) => {
    id += 1;
    const answer = new Promise<Record<string, unknown>>((resolve) => answers.set(id, resolve));
    t.input.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    return answer;
  };
  return { call, close: () => t.kill() };
}

const params = buildRunParams({
  runId: 'run_msg1',
  sessionId: 'ses_1',
  event: textEvent('fix it'),
  binding: { bindingId: 'b', runner: { id: 'takes-messages' } },
  wallClockMs: 60_000,
});
const message = (text: string, runId = 'run_msg1') => ({ runId, goalRevision: 0, event: textEvent(text) });

async function started(r: ReturnType<typeof runnerWith>) {
  const w = wire(r.runner);
  const init = await w.call('initialize', { protocolVersion: 1, host: { name: 't', version: '0' }, capabilities: {} });
  const run = w.call('run', params);
  return { w, init, run };
}

describe('run/message in the runner SDK', () => {
  it('a runner with manifest.append declares it; its handler takes the message, the run accounts for it', async () => {
    const r = runnerWith((taken) => (event) => void taken.push(eventText(event)));
    const { w, init, run } = await started(r);
    expect((init.result as { capabilities: { append: boolean } }).capabilities.append).toBe(true);
    expect((await w.call('run/message', message('and add a test'))).result).toEqual({ accepted: true });
    r.release();
    const result = (await run).result as { output: { parts: { text: string }[] } };
    expect(result.output.parts[0]!.text).toBe('fix it + and add a test');
    w.close();
  });

  it('refused without a handler, when the handler says false or throws, and for another run id', async () => {
    const noHandler = runnerWith(undefined, false);
    const a = await started(noHandler);
    expect((a.init.result as { capabilities: { append: boolean } }).capabilities.append).toBe(false);
    expect((await a.w.call('run/message', message('x'))).result).toEqual({
      accepted: false,
      reason: 'this run takes no messages now',
    });
    noHandler.release();
    await a.run;
    a.w.close();

    let calls = 0;
    const picky = runnerWith(() => (event) => {
      calls += 1;
      if (eventText(event) === 'boom') throw new Error('handler bug');
      return eventText(event) !== 'no';
    });
    const b = await started(picky);
    expect((await b.w.call('run/message', message('no'))).result).toMatchObject({ accepted: false });
    expect((await b.w.call('run/message', message('boom'))).result).toEqual({
      accepted: false,
      reason: "the runner's message handler failed: handler bug",
    });
    expect((await b.w.call('run/message', message('yes', 'run_other'))).result).toEqual({
      accepted: false,
      reason: 'run run_other is not active',
    });
    expect(calls).toBe(2); // another run's message never reaches this run's handler
    picky.release();
    expect(((await b.run).result as { status: string }).status).toBe('completed');
    b.w.close();
  });

  it('malformed params are answered -32602 and the run goes on; after the run ended a message is refused', async () => {
    const r = runnerWith((taken) => (event) => void taken.push(eventText(event)));
    const { w, run } = await started(r);
    const bad = await w.call('run/message', { runId: 'run_msg1', goalRevision: -1, event: { text: 'not an event' } });
    expect((bad.error as { code: number }).code).toBe(-32602);
    expect((await w.call('run/message', message('still here'))).result).toEqual({ accepted: true });
    r.release();
    expect(((await run).result as { output: { parts: { text: string }[] } }).output.parts[0]!.text).toBe(
      'fix it + still here',
    );
    expect((await w.call('run/message', message('late'))).result).toEqual({
      accepted: false,
      reason: 'run run_msg1 is not active',
    });
    w.close();
  });

  it('a handler that resolves only after the run returned: refused (the host runs the message itself)', async () => {
    let finishRun!: () => void;
    let runReturned!: () => void;
    const returned = new Promise<void>((resolve) => (runReturned = resolve));
    const runner = defineRunner({
      manifest: { name: 'late-taker', version: '0.0.0', append: true },
      async run(_event, _binding, ctx) {
        ctx.onMessage(async () => {
          finishRun();
          await returned;
          return true;
        });
        await new Promise<void>((resolve) => (finishRun = resolve));
        runReturned();
        return 'done without it';
      },
    });
    const w = wire(runner);
    await w.call('initialize', { protocolVersion: 1, host: { name: 't', version: '0' }, capabilities: {} });
    const run = w.call('run', params);
    const answer = await w.call('run/message', message('too late'));
    expect(answer.result).toEqual({ accepted: false, reason: 'the run ended before it took the message' });
    expect(((await run).result as { status: string }).status).toBe('completed');
    w.close();
  });
});
