// GET /v1/spend's reads (host/state/spend.ts, host/admin/spend.ts) and GET /v1/skills' (skillStatesOfTenant) over a
// real store, rows written through the store's own functions: only the tenant's sessions count, even under a binding
// id another tenant also used; only the last 24 h; reservations of the tenant's runs; budgets from the bindings. Each
// read goes through its index (no scan of gateway_calls or config_objects) and stays fast beside many other calls.
import { afterAll, describe, expect, it } from 'vitest';
import { spendOfTenant } from '../../../host/admin/spend.js';
import { ConfigRepo } from '../../../host/state/configRepo.js';
import { insertGatewayCall, insertReservation } from '../../../host/state/gatewayCalls.js';
import {
  clearSkillChange,
  noteSkillChanged,
  recordSkillDigest,
  SKILL_STATES_SQL,
  skillStatesOfTenant,
} from '../../../host/state/skillDigests.js';
import { SPEND_SQL } from '../../../host/state/spend.js';
import type { Store } from '../../../host/state/store.js';
import { rawDb } from '../../helpers/rawDb.js';
import { itOnSqlite, tempStore, tempStoreKind } from '../../helpers/store.js';

const stores: Store[] = [];
afterAll(() => stores.forEach((s) => s.close()));
const fresh = (): Store => {
  const { store } = tempStore();
  stores.push(store);
  return store;
};
const HOUR = 3_600_000;

/** A queued run of `tenant`'s binding, and its session. */
function plantRun(store: Store, tenant: string, bindingId: string, runId: string): string {
  const { sessionId } = store.ensureSession(tenant, bindingId, `conv-${runId}`);
  store.append(sessionId, [
    { type: 'run.queued', runId, data: { runner: 'echo', goalRevision: 0, attempt: 1, bindingId } },
  ]);
  return sessionId;
}

function call(store: Store, sessionId: string, runId: string, bindingId: string, o: Record<string, number> = {}) {
  insertGatewayCall(store, {
    at: new Date(Date.now() - (o.hoursAgo ?? 1) * HOUR),
    runId,
    sessionId,
    bindingId,
    modelId: o.model === 2 ? 'big' : 'small',
    provider: 'scripted',
    endpoint: 'chat',
    status: o.status ?? 200,
    attempts: 1,
    inputTokens: o.input ?? 100,
    outputTokens: o.output ?? 20,
    costUsd: o.cost ?? 0.5,
    latencyMs: 3,
    error: null,
  });
}

describe('spendOfTenant', () => {
  it("sums the tenant's own calls of the last 24 h, per model and per binding with reservations and budgets", () => {
    const store = fresh();
    const repo = new ConfigRepo(store);
    repo.put('binding', 'helper', { id: 'helper', tenant: 'acme', limits: { modelTokensPerDay: 1000 } }, 'test');
    repo.put('binding', 'idle', { id: 'idle', tenant: 'acme', limits: { modelCostPerDayUsd: 2 } }, 'test');
    const acme = plantRun(store, 'acme', 'helper', 'run_a');
    // Another tenant's calls under the same binding id (a reused id): never acme's.
    const beta = plantRun(store, 'beta', 'helper', 'run_b');
    call(store, acme, 'run_a', 'helper');
    call(store, acme, 'run_a', 'helper', { model: 2, input: 1000, output: 200, cost: 1.25 });
    call(store, acme, 'run_a', 'helper', { status: 403, input: 0, output: 0, cost: 0 });
    call(store, acme, 'run_a', 'helper', { hoursAgo: 25, input: 5000 });
    call(store, beta, 'run_b', 'helper', { input: 7777 });
    const owner = { pid: process.pid, start: null };
    insertReservation(store, {
      id: 'r1',
      runId: 'run_a',
      bindingId: 'helper',
      tokens: 300,
      costUsd: 0.1,
      atMs: 0,
      owner,
    });
    insertReservation(store, {
      id: 'r2',
      runId: 'run_b',
      bindingId: 'helper',
      tokens: 900,
      costUsd: 9,
      atMs: 0,
      owner,
    });
    const spend = spendOfTenant(store, 'acme');
    expect(spend.models).toEqual([
      { model: 'big', calls: 1, failedCalls: 0, inputTokens: 1000, outputTokens: 200, costUsd: 1.25 },
      { model: 'small', calls: 2, failedCalls: 1, inputTokens: 100, outputTokens: 20, costUsd: 0.5 },
    ]);
    expect(spend.bindings).toEqual([
      {
        binding: 'helper',
        stored: true,
        calls: 3,
        tokens: 1320,
        costUsd: 1.75,
        reserved: { calls: 1, tokens: 300, costUsd: 0.1 },
        budget: { tokensPerDay: 1000, costPerDayUsd: null },
      },
      {
        binding: 'idle',
        stored: true,
        calls: 0,
        tokens: 0,
        costUsd: 0,
        reserved: { calls: 0, tokens: 0, costUsd: 0 },
        budget: { tokensPerDay: null, costPerDayUsd: 2 },
      },
    ]);
    const other = spendOfTenant(store, 'beta');
    expect(other.bindings).toMatchObject([
      { binding: 'helper', stored: false, tokens: 7797, reserved: { tokens: 900 } },
    ]);
    expect(spendOfTenant(store, 'nobody')).toMatchObject({ models: [], bindings: [] });
  });

  itOnSqlite(
    'reads through the window index and the sessions key, and stays fast beside 20 000 old and other calls',
    () => {
      const store = fresh();
      const beta = plantRun(store, 'beta', 'helper', 'run_b');
      const acme = plantRun(store, 'acme', 'helper', 'run_a');
      store.transaction(() => {
        for (let i = 0; i < 10_000; i++) call(store, beta, 'run_b', 'helper', { hoursAgo: 30 + i / 100 });
        for (let i = 0; i < 10_000; i++) call(store, acme, 'run_a', 'helper', { hoursAgo: 48 + i / 100 });
      });
      call(store, acme, 'run_a', 'helper');
      const plan = (sql: string, ...args: unknown[]) =>
        (
          rawDb(store)
            .prepare(`EXPLAIN QUERY PLAN ${sql}`)
            .all(...args) as { detail: string }[]
        )
          .map((r) => r.detail)
          .join('\n');
      const calls = plan(SPEND_SQL.calls, Date.now() - 24 * HOUR, 'acme');
      expect(calls).toMatch(/SEARCH c USING COVERING INDEX gateway_calls_window \(at_ms>\?\)/);
      expect(calls).toMatch(/SEARCH s USING INDEX sqlite_autoindex_sessions_1 \(id=\?\)/);
      expect(calls).not.toMatch(/SCAN (c|s)\b/);
      const reserved = plan(SPEND_SQL.reserved, 'acme');
      expect(reserved).toMatch(/SEARCH r USING INDEX sqlite_autoindex_runs_1 \(id=\?\)/);
      const start = performance.now();
      const spend = spendOfTenant(store, 'acme');
      const ms = performance.now() - start;
      expect(spend.bindings).toMatchObject([{ binding: 'helper', calls: 1, tokens: 120 }]);
      expect(ms).toBeLessThan(50);
    },
  );
});

describe('skillStatesOfTenant', () => {
  it("answers the tenant's skills with their recorded digest and the last change a run found, until re-applied", () => {
    const store = fresh();
    const repo = new ConfigRepo(store);
    repo.put('skill', 'style', { id: 'style', tenant: 'acme', path: '/s' }, 'test');
    repo.put('skill', 'never', { id: 'never', tenant: 'acme', path: '/n' }, 'test');
    repo.put('skill', 'theirs', { id: 'theirs', tenant: 'beta', path: '/t' }, 'test');
    recordSkillDigest(store, { id: 'style', digest: 'sha256:aa', name: 'Style', version: '1' });
    recordSkillDigest(store, { id: 'theirs', digest: 'sha256:tt', name: 'Theirs', version: null });
    noteSkillChanged(store, { id: 'style', digest: 'sha256:bb', at: '2030-01-01T00:00:00.000Z', runId: 'run_1' });
    noteSkillChanged(store, { id: 'style', digest: 'sha256:cc', at: '2030-01-02T00:00:00.000Z', runId: 'run_2' });
    noteSkillChanged(store, { id: 'theirs', digest: 'sha256:uu', at: '2030-01-02T00:00:00.000Z', runId: 'run_3' });
    const states = skillStatesOfTenant(store, 'acme');
    expect(states).toEqual([
      { id: 'never', digest: null, name: null, version: null, recordedAt: null, changed: null },
      {
        id: 'style',
        digest: 'sha256:aa',
        name: 'Style',
        version: '1',
        recordedAt: expect.any(String),
        changed: { digest: 'sha256:cc', at: '2030-01-02T00:00:00.000Z', runId: 'run_2' },
      },
    ]);
    expect(clearSkillChange(store, 'style')).toBe(true);
    expect(clearSkillChange(store, 'style')).toBe(false);
    expect(skillStatesOfTenant(store, 'acme')[1]!.changed).toBeNull();
    noteSkillChanged(store, { id: 'style', digest: 'sha256:dd', at: '2030-01-03T00:00:00.000Z', runId: 'run_4' });
    recordSkillDigest(store, { id: 'style', digest: 'sha256:dd', name: 'Style', version: '2' });
    expect(skillStatesOfTenant(store, 'acme')[1]).toMatchObject({ digest: 'sha256:dd', version: '2', changed: null });
    expect(skillStatesOfTenant(store, 'beta')).toMatchObject([{ id: 'theirs', changed: { runId: 'run_3' } }]);
    if (tempStoreKind() !== 'sqlite') return; // the rest reads SQLite's plan
    const plan = (rawDb(store).prepare(`EXPLAIN QUERY PLAN ${SKILL_STATES_SQL}`).all('acme') as { detail: string }[])
      .map((r) => r.detail)
      .join('\n');
    expect(plan).toMatch(/SEARCH o USING (COVERING )?INDEX config_objects_by_tenant \(kind=\? AND <expr>=\?\)/);
    expect(plan).toMatch(/SEARCH d USING PRIMARY KEY \(skill_id=\?\)/);
  });
});
