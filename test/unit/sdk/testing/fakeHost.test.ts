import { describe, expect, it } from 'vitest';
import { echoRunner } from '../../../../runners/echo/runner.js';
import { defineRunner, ErrorCodes, RpcError } from '../../../../sdk/index.js';
import { createFakeHost } from '../../../../sdk/testing/index.js';

describe('fake host (unit-testing a runner in process)', () => {
  it('runs echo: streamed deltas, then the result', async () => {
    const host = await createFakeHost(echoRunner);
    expect(host.runner.runner).toEqual({ name: 'echo', version: '0.1.0' });
    const { result, updates, violations } = await host.run({ text: 'a b', config: { prefix: '> ' } });
    expect(result).toEqual({ status: 'completed', output: { parts: [{ type: 'text', text: '> a b' }] } });
    expect(
      updates
        .filter((u) => u.kind === 'message.delta')
        .map((u) => (u as { text: string }).text)
        .join(''),
    ).toBe('> a b');
    expect(violations).toEqual([]);
    await host.shutdown();
  });

  it('fails a run whose config does not match the runner configSchema, naming the field', async () => {
    const host = await createFakeHost(echoRunner);
    const { result } = await host.run({ config: { delayMs: 'slow' } });
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('invalid_config');
    expect(result.error?.message).toMatch(/delayMs/);
    await host.shutdown();
  });

  it('cancels through the signal: the run ends cancelled, not failed', async () => {
    const host = await createFakeHost(echoRunner);
    const controller = new AbortController();
    const pending = host.run({ text: 'one two three four five', config: { delayMs: 200 }, signal: controller.signal });
    setTimeout(() => controller.abort(new Error('stop')), 50);
    const { result } = await pending;
    expect(result.status).toBe('cancelled');
    await host.shutdown();
  });

  it('answers state requests in memory and refuses what is not granted or not stubbed', async () => {
    const counter = defineRunner({
      manifest: { name: 'counter', version: '1' },
      async run(_e, _b, ctx) {
        const current = await ctx.state.get('n');
        const n = (current.found ? (current.value as number) : 0) + 1;
        await ctx.state.set('n', n);
        const kb = await ctx.kb.retrieve('kb', 'q').catch((e: RpcError) => e.code);
        const model = await ctx.model
          .complete({ model: 'm', messages: [{ role: 'user', content: 'x' }] })
          .catch((e: RpcError) => e.code);
        return JSON.stringify({ n, kb, model });
      },
    });
    const host = await createFakeHost(counter, { grants: ['state/get', 'state/set', 'model/complete'] });
    // The model is granted as a handle of the binding; the fake host has no stub for it.
    const binding = { models: [{ id: 'm' }] };
    await host.run({ binding });
    const { result } = await host.run({ binding });
    expect(JSON.parse((result.output!.parts[0] as { text: string }).text)).toEqual({
      n: 2,
      kb: ErrorCodes.PolicyDenied,
      model: ErrorCodes.NotSupported,
    });
    expect(host.state.get('n')).toBe(2);
    await host.shutdown();
  });

  it(
    'a throwing runner fails its run with the message; a ' + 'returned invalid result fails as invalid_result',
    async () => {
      const thrower = defineRunner({
        manifest: { name: 't', version: '1' },
        run: () => Promise.reject(new Error('no model configured')),
      });
      const host = await createFakeHost(thrower);
      expect((await host.run()).result).toEqual({
        status: 'failed',
        error: { code: 'runner_error', message: 'no model configured' },
      });
      await host.shutdown();
      const liar = defineRunner({ manifest: { name: 'l', version: '1' }, run: () => ({ status: 'fine' }) as never });
      const host2 = await createFakeHost(liar);
      const { result } = await host2.run();
      expect(result.status).toBe('failed');
      expect(result.error?.code).toBe('invalid_result');
      await host2.shutdown();
    },
  );

  it('emit() validates updates in the runner, so an author sees a bad update at once', async () => {
    const bad = defineRunner({
      manifest: { name: 'b', version: '1' },
      run: (_e, _b, ctx) => {
        ctx.emit({ kind: 'progress' } as never);
      },
    });
    const host = await createFakeHost(bad);
    const { result, updates } = await host.run();
    expect(result.status).toBe('failed');
    expect(result.error?.message).toMatch(/message/);
    expect(updates).toEqual([]);
    await host.shutdown();
  });
});
