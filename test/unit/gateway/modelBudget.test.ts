// Budget reservations: what a call reserves on each wire (its output maximum, added when absent,
// plus request bytes / 4), and the store-side check that holds reservations of calls in flight,
// drops those of dead host processes, and refuses a call whose reservation would cross a budget.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { BindingLimitsSchema, ModelResourceSchema } from '../../../host/bindings/schema.js';
import {
  budgetUse,
  DEFAULT_MAX_OUTPUT_TOKENS,
  planReservation,
  releaseReservation,
  releaseRunReservations,
  reserve,
} from '../../../host/gateway/modelBudget.js';
import type { GatewayRun } from '../../../host/gateway/runContext.js';
import { processStartTime } from '../../../host/util/procIdentity.js';
import { tempStore } from '../../helpers/store.js';
import { rawDb } from '../../helpers/rawDb.js';

const model = ModelResourceSchema.parse({ id: 'm', provider: 'scripted', model: 'scripted-1' });
const priced = ModelResourceSchema.parse({
  id: 'p',
  provider: 'scripted',
  model: 'scripted-1',
  pricing: { inputPerMTokUsd: 2_000, outputPerMTokUsd: 10_000 },
});

const plan = (format: 'anthropic' | 'responses' | 'chat', body: Record<string, unknown>, m = model) => {
  const p = planReservation(m, format, body);
  if ('invalid' in p) throw new Error(p.invalid);
  return p;
};

describe('what a call reserves', () => {
  it("each wire's output maximum, plus ceil(bytes of the body as sent / 4) for input", () => {
    const a = plan('anthropic', { model: 'x', max_tokens: 77, messages: [{ role: 'user', content: 'héllo' }] });
    expect(a.reservation.outputTokens).toBe(77);
    expect(a.reservation.inputTokens).toBe(Math.ceil(Buffer.byteLength(JSON.stringify(a.body)) / 4));
    expect(a.reservation.tokens).toBe(a.reservation.inputTokens + 77);
    expect(plan('responses', { max_output_tokens: 12, input: 'hi' }).reservation.outputTokens).toBe(12);
    expect(plan('chat', { max_tokens: 30, messages: [] }).reservation.outputTokens).toBe(30);
    expect(plan('chat', { max_completion_tokens: 40, messages: [] }).reservation.outputTokens).toBe(40);
    // Both chat fields: the larger one (a provider may honour either).
    expect(plan('chat', { max_tokens: 50, max_completion_tokens: 40, messages: [] }).reservation.outputTokens).toBe(50);
    // Multi-byte text counts by bytes, not characters.
    const cjk = plan('anthropic', { max_tokens: 1, messages: [{ role: 'user', content: '漢'.repeat(400) }] });
    expect(cjk.reservation.inputTokens).toBeGreaterThanOrEqual(300);
  });

  it('a request without a maximum reserves the host default and is sent with it, so the provider enforces it', () => {
    for (const [format, field] of [
      ['anthropic', 'max_tokens'],
      ['responses', 'max_output_tokens'],
      ['chat', 'max_completion_tokens'],
    ] as const) {
      const p = plan(format, { model: 'x', input: 'hi', max_tokens: format === 'chat' ? null : undefined });
      expect(p.body[field]).toBe(DEFAULT_MAX_OUTPUT_TOKENS);
      expect(p.reservation.outputTokens).toBe(DEFAULT_MAX_OUTPUT_TOKENS);
      expect(p.reservation.inputTokens).toBe(Math.ceil(Buffer.byteLength(JSON.stringify(p.body)) / 4));
    }
  });

  it('a maximum that is not a positive integer is refused, naming the field', () => {
    for (const bad of ['100', 0, -5, 1.5, 2 ** 60, true, {}]) {
      expect(planReservation(model, 'anthropic', { max_tokens: bad })).toEqual({
        invalid: 'max_tokens must be a positive integer',
      });
      expect(planReservation(model, 'chat', { max_completion_tokens: bad })).toEqual({
        invalid: 'max_completion_tokens must be a positive integer',
      });
    }
    expect(planReservation(model, 'responses', { max_output_tokens: 'lots' })).toEqual({
      invalid: 'max_output_tokens must be a positive integer',
    });
  });

  it("cost is the reservation's tokens at the model's prices (0 unpriced)", () => {
    const p = plan('anthropic', { max_tokens: 100, messages: [] }, priced);
    expect(p.reservation.costUsd).toBeCloseTo((p.reservation.inputTokens * 2_000 + 100 * 10_000) / 1_000_000, 12);
    expect(plan('anthropic', { max_tokens: 100, messages: [] }).reservation.costUsd).toBe(0);
  });
});

const run = (runId: string, limits: Record<string, unknown>) =>
  ({
    claims: { runId, sessionId: 's', bindingId: 'b', runnerId: 'r' },
    budget: BindingLimitsSchema.parse(limits),
  }) as unknown as GatewayRun;
const r = (tokens: number, costUsd = 0) => ({ inputTokens: tokens - 1, outputTokens: 1, tokens, costUsd });

describe('reservations in the store', () => {
  it('admit while settled + reserved + this call fit; refuse past it naming the budget; settle and release', () => {
    const { store } = tempStore();
    const a = run('ra', { modelTokensPerRun: 100 });
    const first = reserve(store, a, r(60));
    expect(first).toMatchObject({ id: expect.any(String) });
    const refused = reserve(store, a, r(41));
    expect(refused).toMatchObject({ status: 403, deniedBy: 'binding.limits.modelTokensPerRun' });
    expect((refused as { message: string }).message).toBe(
      'paddock: model budget limits.modelTokensPerRun (binding b) would be exceeded: this run used 0 of 100 ' +
        'tokens, 60 tokens are reserved by calls in flight, and this call reserves up to 41 tokens (input ' +
        'estimate 40 + max output 1)',
    );
    expect(reserve(store, a, r(40))).toMatchObject({ id: expect.any(String) });
    expect(budgetUse(store, a).run.reserved.tokens).toBe(100);
    releaseReservation(store, (first as { id: string }).id);
    expect(budgetUse(store, a).run.reserved.tokens).toBe(40);
    expect(releaseRunReservations(store, 'ra')).toBe(1);
    expect(budgetUse(store, a).run.reserved.tokens).toBe(0);
  });

  it('per-day budgets count every run of the binding, reserved and settled; cost budgets count reserved cost', () => {
    const { store } = tempStore();
    const limits = { modelTokensPerDay: 100, modelCostPerRunUsd: 0.5 };
    expect(reserve(store, run('d1', limits), r(70))).toMatchObject({ id: expect.any(String) });
    expect(reserve(store, run('d2', limits), r(31))).toMatchObject({ deniedBy: 'binding.limits.modelTokensPerDay' });
    rawDb(store)
      .prepare(
        'INSERT INTO gateway_calls (at, at_ms, run_id, session_id, binding_id, model_id, provider, endpoint, ' +
          "status, attempts, input_tokens, output_tokens, cost_usd, latency_ms) VALUES ('', ?, 'd0', 's', 'b', " +
          "'m', 'scripted', 'anthropic', 200, 1, 20, 5, 0, 1)",
      )
      .run(Date.now());
    expect(reserve(store, run('d2', limits), r(6))).toMatchObject({ deniedBy: 'binding.limits.modelTokensPerDay' });
    expect(reserve(store, run('d2', limits), r(5, 0.3))).toMatchObject({ id: expect.any(String) });
    // A day-old settled call no longer counts.
    rawDb(store)
      .prepare('UPDATE gateway_calls SET at_ms = ? WHERE run_id = ?')
      .run(Date.now() - 86_400_001, 'd0');
    expect(reserve(store, run('d2', limits), r(20, 0.3))).toMatchObject({
      deniedBy: 'binding.limits.modelCostPerRunUsd',
    });
    expect(reserve(store, run('d2', limits), r(20, 0.2))).toMatchObject({ id: expect.any(String) });
  });

  it("a per-day cost budget counts the binding's reserved and settled cost across runs", () => {
    const { store } = tempStore();
    const limits = { modelCostPerDayUsd: 1 };
    expect(reserve(store, run('c1', limits), r(1, 0.6))).toMatchObject({ id: expect.any(String) });
    const refused = reserve(store, run('c2', limits), r(1, 0.5));
    expect(refused).toMatchObject({ deniedBy: 'binding.limits.modelCostPerDayUsd' });
    expect((refused as { message: string }).message).toContain(
      'the binding in the last 24 h used 0.000000 of 1.000000 USD, 0.600000 USD are reserved by calls in flight',
    );
    rawDb(store)
      .prepare(
        'INSERT INTO gateway_calls (at, at_ms, run_id, session_id, binding_id, model_id, provider, endpoint, ' +
          "status, attempts, input_tokens, output_tokens, cost_usd, latency_ms) VALUES ('', ?, 'c0', 's', 'b', " +
          "'m', 'scripted', 'anthropic', 200, 1, 1, 1, 0.35, 1)",
      )
      .run(Date.now());
    expect(reserve(store, run('c2', limits), r(1, 0.06))).toMatchObject({
      deniedBy: 'binding.limits.modelCostPerDayUsd',
    });
    expect(reserve(store, run('c2', limits), r(1, 0.05))).toMatchObject({ id: expect.any(String) });
  });

  it("reservations of a host process that is gone are dropped by the next check; a live one's are kept", () => {
    const { store } = tempStore();
    const a = run('rx', { modelTokensPerRun: 100 });
    // A host process that has exited (a real pid, no longer running) and one that still runs.
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    const deadPid = Number(dead.stdout);
    const insert = rawDb(store).prepare(
      'INSERT INTO gateway_reservations (id, run_id, binding_id, tokens, cost_usd, at_ms, owner_pid, ' +
        "owner_start) VALUES (?, 'rx', 'b', ?, 0, 0, ?, ?)",
    );
    insert.run('dead', 90, deadPid, 12345);
    // Our own pid with another start time: a previous host that had this pid.
    insert.run('reused-pid', 90, process.pid, (processStartTime(process.pid) ?? 0) - 1);
    insert.run('live', 30, process.ppid, processStartTime(process.ppid));
    expect(reserve(store, a, r(70))).toMatchObject({ id: expect.any(String) });
    expect(rawDb(store).prepare('SELECT id FROM gateway_reservations ORDER BY id').pluck().all()).toEqual(
      expect.arrayContaining(['live']),
    );
    expect(
      rawDb(store)
        .prepare("SELECT COUNT(*) FROM gateway_reservations WHERE id IN ('dead', 'reused-pid')")
        .pluck()
        .get(),
    ).toBe(0);
    expect(reserve(store, a, r(1))).toMatchObject({ deniedBy: 'binding.limits.modelTokensPerRun' });
  });
});
