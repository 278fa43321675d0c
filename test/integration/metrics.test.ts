// The metrics of `paddock serve` over a real host: real store, real dispatches of fixture runners (a completed run
// that calls the scripted model through the gateway, two runs stopped by their wall-clock limit, a memory hog
// killed under bwrap), real refusals. The exposition is parsed strictly and the values are asserted to move; a
// canary planted in everything a tenant controls never reaches the metrics text.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics } from '../../host/api/metrics/index.js';
import type { DispatchTicket } from '../../host/dispatch/dispatcher.js';
import type { RunOutcome } from '../../host/process/outcome.js';
import { probeMachine } from '../../host/sandbox/probe.js';
import { chatEvent, tempHost } from '../helpers/host.js';
import { parseExposition, seriesOf, valueOf } from '../helpers/promText.js';

const CANARY = `metricscanary${process.pid}x7Qw`;
const machine = probeMachine();

const host = tempHost({ limits: { memoryBytes: 256 * 1024 * 1024, pids: 32, wallClockMs: 60_000 } });
const metrics = createMetrics(host.store, { dispatcher: host.dispatcher, gateway: host.gateway });
afterAll(async () => {
  metrics.close();
  await host.close();
});

const scrape = async () => parseExposition(await metrics.render());
const started = (t: DispatchTicket) => {
  if (t.status === 'duplicate') throw new Error('unexpected duplicate');
  return t;
};

beforeAll(() => {
  host.apply({
    resources: { models: [{ id: 'sm', provider: 'scripted', model: 'scripted-1' }] },
    bindings: [
      {
        id: 'gw',
        runner: 'calls-gateway',
        route: { platform: 'telegram', bot: 'gw' },
        sandbox: 'process',
        grants: { models: ['sm'] },
        config: { steps: [{ do: 'complete', model: 'sm', text: `SAY:${CANARY} the reply` }] },
      },
      {
        id: 'slow',
        runner: 'hangs',
        route: { platform: 'telegram', bot: 'slow' },
        sandbox: 'process',
        limits: { wallClockMs: 1500, maxConcurrentRuns: 1 },
      },
      {
        id: 'hog',
        runner: 'tries-sandbox-escapes',
        route: { platform: 'telegram', bot: 'hog' },
        sandbox: 'bwrap',
        config: { actions: ['forks:100', 'hog:1024'] },
      },
      { id: 'off', runner: 'hangs', route: { platform: 'telegram', bot: 'off' }, sandbox: 'process', enabled: false },
    ],
  });
});

describe('paddock serve metrics over a real host', () => {
  it('the exposition is valid Prometheus text: every family declared, Node defaults present', async () => {
    const text = await metrics.render();
    expect(metrics.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    const e = parseExposition(text);
    for (const [name, type] of [
      ['paddock_runs_total', 'counter'],
      ['paddock_run_duration_seconds', 'histogram'],
      ['paddock_sandbox_kills_total', 'counter'],
      ['paddock_dispatch_refusals_total', 'counter'],
      ['paddock_gateway_calls_total', 'counter'],
      ['paddock_gateway_latency_seconds', 'histogram'],
      ['paddock_gateway_tokens_total', 'counter'],
      ['paddock_queue_depth', 'gauge'],
      ['paddock_active_runs', 'gauge'],
      ['paddock_webhook_deliveries_total', 'counter'],
      ['paddock_sse_clients', 'gauge'],
      ['paddock_http_requests_total', 'counter'],
      ['paddock_http_request_duration_seconds', 'histogram'],
      ['process_cpu_user_seconds_total', 'counter'],
      ['nodejs_heap_size_used_bytes', 'gauge'],
    ])
      expect(e.families.get(name!)?.type, name).toBe(type);
    // Fixed-set series exist at 0 before anything happened.
    expect(seriesOf(e, 'paddock_sandbox_kills_total')).toHaveLength(12);
    expect(valueOf(e, 'paddock_dispatch_refusals_total', { reason: 'no_binding' })).toBe(0);
    // The strict reader is not a rubber stamp.
    expect(() => parseExposition(`${text}paddock_undeclared 1\n`)).toThrow(/undeclared/);
    const histogram = (buckets: string) => `# TYPE h histogram\n${buckets}h_sum 1\nh_count 1\n`;
    expect(() => parseExposition(histogram('h_bucket{le="1"} 1\nh_bucket{le="+Inf"} 1\n'))).not.toThrow();
    expect(() => parseExposition(histogram('h_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\n'))).toThrow(/cumulative/);
    expect(() => parseExposition(histogram('h_bucket{le="1"} 1\n'))).toThrow(/\+Inf/);
    expect(() => parseExposition('# TYPE c counter\nc{a="x\\q"} 1\n')).toThrow(/escape/);
  });

  it('a completed run with a model call moves runs, duration, gateway calls, latency and tokens', async () => {
    const before = await scrape();
    const ticket = started(
      await host.dispatcher.dispatch(chatEvent({ bot: 'gw', text: `hello ${CANARY}`, conversation: { id: CANARY } })),
    );
    const outcome = await ticket.done;
    expect(outcome.status, outcome.reason).toBe('completed');
    const after = await scrape();
    const delta = (name: string, labels: Record<string, string> = {}) =>
      valueOf(after, name, labels) - valueOf(before, name, labels);
    expect(delta('paddock_runs_total', { outcome: 'completed', binding: 'gw' })).toBe(1);
    expect(delta('paddock_run_duration_seconds_count', { binding: 'gw' })).toBe(1);
    expect(valueOf(after, 'paddock_run_duration_seconds_sum', { binding: 'gw' })).toBeGreaterThan(0);
    expect(delta('paddock_gateway_calls_total', { provider: 'scripted', status: '200' })).toBe(1);
    expect(delta('paddock_gateway_latency_seconds_count', { provider: 'scripted' })).toBe(1);
    const usage = outcome.usage!;
    expect(usage.inputTokens).toBeGreaterThan(0);
    expect(delta('paddock_gateway_tokens_total', { direction: 'input' })).toBe(usage.inputTokens);
    expect(delta('paddock_gateway_tokens_total', { direction: 'output' })).toBe(usage.outputTokens);
    expect(valueOf(after, 'paddock_active_runs')).toBe(0);
  });

  it('a one-slot binding: the gauges read one active and one queued run; both stop at the wall clock', async () => {
    const before = await scrape();
    const a = started(await host.dispatcher.dispatch(chatEvent({ bot: 'slow', conversation: { id: 'a' } })));
    const b = started(await host.dispatcher.dispatch(chatEvent({ bot: 'slow', conversation: { id: 'b' } })));
    expect([a.status, b.status]).toEqual(['started', 'queued']);
    const during = await scrape();
    expect(valueOf(during, 'paddock_active_runs')).toBe(1);
    expect(valueOf(during, 'paddock_queue_depth')).toBe(1);
    const outcomes: RunOutcome[] = [await a.done, await b.done];
    for (const o of outcomes) {
      expect(o.status, o.reason).toBe('timed_out');
      expect(o.limits).toEqual(['wallClockMs']);
    }
    // The structured limit is what the store recorded.
    const ended = host.store.readEvents(a.sessionId).find((e) => e.type === 'run.ended')!;
    expect((ended.data as { limits?: string[] }).limits).toEqual(['wallClockMs']);
    const after = await scrape();
    expect(
      valueOf(after, 'paddock_runs_total', { outcome: 'timed_out', binding: 'slow' }) -
        valueOf(before, 'paddock_runs_total', { outcome: 'timed_out', binding: 'slow' }),
    ).toBe(2);
    expect(
      valueOf(after, 'paddock_sandbox_kills_total', { limit: 'wallClockMs' }) -
        valueOf(before, 'paddock_sandbox_kills_total', { limit: 'wallClockMs' }),
    ).toBe(2);
    expect(valueOf(after, 'paddock_run_duration_seconds_count', { binding: 'slow' })).toBe(2);
    expect(valueOf(after, 'paddock_active_runs')).toBe(0);
    expect(valueOf(after, 'paddock_queue_depth')).toBe(0);
  });

  it('under bwrap, a fork bomb held by the pids limit and a memory hog killed by memory both count', async () => {
    expect(machine.bwrap, machine.bwrap.why).toMatchObject({ available: true });
    expect(machine.cgroups.memory, machine.cgroups.why).toBeTruthy();
    const before = await scrape();
    const outcome = await started(await host.dispatcher.dispatch(chatEvent({ bot: 'hog' }))).done;
    expect(outcome.status, outcome.reason).toBe('crashed');
    expect(outcome.reason).toMatch(/pids limit refused \d+ process.*memory limit|memory limit.*pids limit refused/);
    expect([...outcome.limits!].sort()).toEqual(['memoryBytes', 'pids']);
    const after = await scrape();
    for (const limit of ['memoryBytes', 'pids'])
      expect(
        valueOf(after, 'paddock_sandbox_kills_total', { limit }) -
          valueOf(before, 'paddock_sandbox_kills_total', { limit }),
      ).toBe(1);
    expect(valueOf(after, 'paddock_runs_total', { outcome: 'crashed', binding: 'hog' })).toBe(1);
  });

  it('real refusals count by their stable reason', async () => {
    const before = await scrape();
    const refuse = (input: unknown) =>
      expect(host.dispatcher.dispatch(input)).rejects.toMatchObject({ code: expect.any(String) });
    await refuse(chatEvent({ bot: `nobody-${CANARY}`, id: CANARY }));
    await refuse(chatEvent({ bot: 'off', text: CANARY }));
    await refuse({ ...chatEvent({ bot: 'gw' }), conversation: CANARY });
    await refuse({ ...chatEvent({ bot: 'gw' }), message: { parts: [{ type: 'text', text: 'x'.repeat(2_000_000) }] } });
    const after = await scrape();
    const delta = (reason: string) =>
      valueOf(after, 'paddock_dispatch_refusals_total', { reason }) -
      valueOf(before, 'paddock_dispatch_refusals_total', { reason });
    expect([delta('no_binding'), delta('binding_disabled'), delta('invalid_event'), delta('event_too_large')]).toEqual([
      1, 1, 1, 1,
    ]);
    expect(delta('other')).toBe(0);
  });

  it('a canary in messages, conversation and event ids, bot names and run output never reaches the text', async () => {
    // It is in the store (so the check below means something) …
    const sessions = host.store.runs({ bindingId: 'gw' }).map((r) => r.sessionId);
    const stored = sessions.flatMap((s) => host.store.readEvents(s)).map((e) => JSON.stringify(e));
    expect(stored.join('\n')).toContain(CANARY);
    // … and in no byte of the exposition, in any encoding a label could carry.
    metrics.httpRequest(`/v1/sessions/${CANARY}`, 200, 0.01);
    metrics.webhookDelivery(CANARY);
    const text = await metrics.render();
    for (const form of [CANARY, Buffer.from(CANARY).toString('base64'), encodeURIComponent(CANARY), 'x7Qw'])
      expect(text).not.toContain(form);
  });
});
