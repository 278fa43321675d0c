// Label cardinality stays bounded when 1 000 distinct bogus values are thrown at every label of the metrics:
// real refusals of a real dispatcher (bogus bots, event ids, conversations, malformed events), runs with 1 000
// binding ids written through the real store's API (synthetic runs: no runner, the events a host would commit),
// the server's hooks, and — named fake, since the gateway's providers come from a closed enum in configuration —
// a gateway source that reports 1 000 bogus providers and statuses.
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { createMetrics, REFUSAL_REASONS, WEBHOOK_RESULTS } from '../../host/api/metrics/index.js';
import type { ObservedCall } from '../../host/gateway/modelCall.js';
import { LIMIT_HITS, OUTCOME_STATUSES } from '../../host/process/outcome.js';
import { chatEvent, tempHost } from '../helpers/host.js';
import { parseExposition, seriesOf } from '../helpers/promText.js';

const CANARY = `cardcanary${process.pid}Zx9`;
const N = 1000;
const MAX = 100;

const host = tempHost();
/** Fake gateway source (named): reports whatever calls the test makes up. */
const fakeGateway = {
  listener: undefined as ((call: ObservedCall) => void) | undefined,
  observeCalls(listener: (call: ObservedCall) => void) {
    this.listener = listener;
    return () => (this.listener = undefined);
  },
};
const metrics = createMetrics(host.store, { dispatcher: host.dispatcher, gateway: fakeGateway, maxLabelValues: MAX });
afterAll(async () => {
  metrics.close();
  await host.close();
});

/** Distinct values of one label over a metric's series. */
const labelValues = (e: ReturnType<typeof parseExposition>, name: string, label: string) =>
  new Set(seriesOf(e, name).map((s) => s.labels[label]!));

describe('metrics label cardinality under 1 000 distinct bogus values per label', () => {
  it('stays bounded, keeps only allowed values, and carries none of the bogus text', async () => {
    // Real refusals: every event distinct (bot, id, conversation), none routes; then malformed ones.
    for (let i = 0; i < N; i++) {
      const bogus = `${CANARY}-${i}-${randomUUID()}`;
      await expect(
        host.dispatcher.dispatch(chatEvent({ bot: bogus, id: bogus, conversation: { id: bogus }, text: bogus })),
      ).rejects.toMatchObject({ data: { reason: 'no_binding' } });
      await expect(host.dispatcher.dispatch({ platform: bogus, [bogus]: bogus })).rejects.toMatchObject({
        data: { reason: 'invalid_event' },
      });
    }
    // Synthetic runs through the real store: 1 000 well-formed binding ids, 1 000 malformed ones carrying the
    // canary, and limits/statuses the schema allows.
    for (let i = 0; i < N; i++) {
      for (const bindingId of [`bind-${i}`, `Bad Binding ${CANARY} ${i}`]) {
        const { sessionId } = host.store.ensureSession('default', bindingId, `conv-${CANARY}-${i}`);
        const runId = `run_${randomUUID()}`;
        host.store.append(sessionId, [
          { type: 'run.queued', runId, data: { runner: 'synthetic', goalRevision: 1, attempt: 1, bindingId } },
          { type: 'run.started', runId, data: { pid: process.pid, pidStart: null } },
        ]);
        host.store.append(sessionId, [
          {
            type: 'run.ended',
            runId,
            data: {
              status: OUTCOME_STATUSES[i % OUTCOME_STATUSES.length]!,
              reason: `${CANARY} the memory limit (1 bytes) killed 1 process(es)`,
              exitCode: null,
              signal: null,
              limits: [LIMIT_HITS[i % LIMIT_HITS.length]!, LIMIT_HITS[i % LIMIT_HITS.length]!],
            },
          },
        ]);
      }
    }
    // The server's hooks and the (fake) gateway source.
    for (let i = 0; i < N; i++) {
      const letters = i.toString(26).replace(/\d/g, (d) => 'qrstuvwxyz'[Number(d)]!);
      // 1 000 declared patterns: the cap, not the declaration, bounds them. The URLs below are never declared.
      metrics.declareRoute(`/r/${letters}`);
      metrics.httpRequest(`/v1/runs/run_${randomUUID()}`, 200, 0.001);
      metrics.httpRequest(`/v1/sessions/${CANARY}${i}?q=${CANARY}`, 404, 0.001);
      metrics.httpRequest(`/r/${letters}`, [200, 1000 + i, -i, 1.5][i % 4]!, 0.001);
      metrics.webhookDelivery(`${CANARY}-${i}`);
      metrics.sseClients(1);
      fakeGateway.listener!({
        provider: `${CANARY}-${i}`,
        status: 1000 + i,
        latencyMs: i,
        inputTokens: 1,
        outputTokens: 2,
      });
    }
    metrics.sseClients(-N);

    const text = await metrics.render();
    expect(text).not.toContain(CANARY);
    expect(text).not.toContain('Zx9');
    const e = parseExposition(text);

    const bindings = labelValues(e, 'paddock_runs_total', 'binding');
    expect(bindings.size).toBeLessThanOrEqual(MAX + 1);
    expect(bindings.has('other')).toBe(true);
    for (const b of bindings) expect(b).toMatch(/^(bind-\d+|other)$/);
    expect(labelValues(e, 'paddock_runs_total', 'outcome')).toEqual(new Set(OUTCOME_STATUSES));
    expect(seriesOf(e, 'paddock_runs_total').reduce((n, s) => n + s.value, 0)).toBe(2 * N);
    expect(labelValues(e, 'paddock_run_duration_seconds_count', 'binding').size).toBeLessThanOrEqual(MAX + 1);
    // Each run counts each of its limits once, whatever the event repeats.
    expect(seriesOf(e, 'paddock_sandbox_kills_total').reduce((n, s) => n + s.value, 0)).toBe(2 * N);
    expect(labelValues(e, 'paddock_sandbox_kills_total', 'limit')).toEqual(new Set(LIMIT_HITS));

    expect(labelValues(e, 'paddock_dispatch_refusals_total', 'reason')).toEqual(new Set([...REFUSAL_REASONS, 'other']));
    expect(labelValues(e, 'paddock_webhook_deliveries_total', 'result')).toEqual(
      new Set([...WEBHOOK_RESULTS, 'other']),
    );
    expect(labelValues(e, 'paddock_gateway_calls_total', 'provider')).toEqual(new Set(['other']));
    expect(labelValues(e, 'paddock_gateway_calls_total', 'status')).toEqual(new Set(['other']));

    const routes = labelValues(e, 'paddock_http_requests_total', 'route');
    expect(routes.size).toBeLessThanOrEqual(MAX + 1);
    for (const r of routes) expect(r).toMatch(/^(\/r\/[a-z]+|other)$/);
    expect(labelValues(e, 'paddock_http_requests_total', 'status')).toEqual(new Set(['200', '404', 'other']));
    expect(seriesOf(e, 'paddock_http_requests_total').length).toBeLessThanOrEqual(3 * (MAX + 1));
    expect(seriesOf(e, 'paddock_sse_clients')[0]!.value).toBe(0);
  });

  it('only declared route patterns are labels: an undeclared pattern or URL is other, whatever its shape', async () => {
    const m = createMetrics(host.store, { defaultMetrics: false });
    try {
      m.declareRoute('/v1/runs/:id');
      m.httpRequest('/v1/runs/:id', 200, 0.01);
      m.httpRequest('/v1/undeclared', 200, 0.01);
      // A URL shaped like a pattern (no long digit or hex run, no store prefix) is still not declared.
      m.httpRequest(`/v1/sessions/${CANARY}`, 200, 0.01);
      m.httpRequest('/v1/sessions/abc', 200, 0.01);
      m.declareRoute('/v1/late'); // registered after the first requests
      m.httpRequest('/v1/late', 200, 0.01);
      m.httpRequest(undefined, 404, 0.01);
      const e = parseExposition(await m.render());
      expect(labelValues(e, 'paddock_http_requests_total', 'route')).toEqual(
        new Set(['/v1/runs/:id', '/v1/late', 'other']),
      );
      expect(e.families.has('process_cpu_user_seconds_total')).toBe(false);
    } finally {
      m.close();
    }
  });
});
