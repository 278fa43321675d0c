// Reads whose cost grew with the whole store (third outside attack of issue 13, F2/F3/F5): each is now bounded by
// what it is about (migration 0009's indexes). Each test builds the store at a scale where the old read took 10–100×
// the bound asserted (figures in the comments, measured on the 2-core test machine), and checks the answers too.
import { afterAll, describe, expect, it } from 'vitest';
import { listBindings } from '../../../host/admin/bindings.js';
import { ConfigRepo } from '../../../host/state/configRepo.js';
import { exportAudit } from '../../../host/ops/auditExport.js';
import { tenantOf } from '../../../host/config/tenant.js';
import { terminalSeqOfRun } from '../../../host/state/streamReads.js';
import type { Store } from '../../../host/state/store.js';
import { rawDb } from '../../helpers/rawDb.js';
import { tempStore } from '../../helpers/store.js';

const stores: Store[] = [];
afterAll(() => stores.forEach((s) => s.close()));
const fresh = (): Store => {
  const { store } = tempStore();
  stores.push(store);
  return store;
};
/** The wall time of `fn` in ms, and its value. */
const timed = <T>(fn: () => T): { ms: number; value: T } => {
  const start = performance.now();
  const value = fn();
  return { ms: performance.now() - start, value };
};
const binding = (id: string, tenant?: string) => ({
  id,
  runner: 'echo',
  route: { bot: id },
  ...(tenant && { tenant }),
});

describe('reads bounded by what they are about (migration 0009)', () => {
  it('an audit export page of config.deleted records costs the same however long the configuration history', () => {
    const store = fresh();
    const repo = new ConfigRepo(store);
    const n = 4000;
    // Tenant other churns n bindings; each deletion's tenant is its last spec's (a lookup per exported record).
    store.transaction(() => {
      for (let i = 0; i < n; i++) repo.put('binding', `o-${i}`, binding(`o-${i}`, 'other'), 'user:other');
    });
    const firstDeletion = rawDb(store).prepare('SELECT max(seq) FROM audit').pluck().get() as number;
    store.transaction(() => {
      for (let i = 0; i < n; i++) repo.delete('binding', `o-${i}`, 'user:other');
    });
    // Re-created by default afterwards: the deletions stay other's (the old life's spec, never the new one's).
    repo.put('binding', 'o-0', binding('o-0'), 'user:default');
    // Before the indexes one such page scanned config_changes once per record: ~1.5 s here (n = 4000), 300 s in the
    // attack (15 000 × several cycles). Now each record is two index lookups.
    const page = timed(() => exportAudit(store, 'other', { after: firstDeletion, limit: 1000, scan: 10_000 }));
    expect(page.value.records).toHaveLength(1000);
    expect(page.value.records.every((r) => r.type === 'config.deleted' && r.tenant === 'other')).toBe(true);
    expect(page.ms).toBeLessThan(400);
    // The default tenant's admin sees none of them, and its page (every deletion looked at) is as quick.
    const theirs = timed(() => exportAudit(store, 'default', { after: firstDeletion, limit: 1000, scan: 10_000 }));
    expect(theirs.value.records.map((r) => [r.type, (r.data as { id: string }).id])).toEqual([
      ['config.created', 'o-0'],
    ]);
    expect(theirs.ms).toBeLessThan(600);
  });

  it("routing reads one tenant's bindings: another tenant's thousands are never read", () => {
    const store = fresh();
    const repo = new ConfigRepo(store);
    const big = { config: { blob: 'x'.repeat(4000) } };
    store.transaction(() => {
      for (let i = 0; i < 4000; i++) repo.put('binding', `o-${i}`, { ...binding(`o-${i}`, 'other'), ...big }, 'u');
      repo.put('binding', 'd-b', binding('d-b', 'default'), 'u');
      // A spec stored without a tenant (before tenants existed) is the default tenant's, as tenantOf reads it.
      repo.put('binding', 'd-a', binding('d-a'), 'u');
      repo.put('model', 'm-other', { id: 'm-other', tenant: 'other' }, 'u');
      repo.put('model', 'm-default', { id: 'm-default' }, 'u');
    });
    const all = repo.list('binding');
    for (const tenant of ['default', 'other', 'nobody'])
      expect(repo.listOfTenant('binding', tenant)).toEqual(all.filter((o) => tenantOf(o.spec as never) === tenant));
    // The admin API's binding list (and the OpenAI-compatible routes) read the same range.
    expect(listBindings(store, 'other')).toEqual(repo.listOfTenant('binding', 'other'));
    expect(listBindings(store)).toEqual(all);
    expect(repo.listAllOfTenant('default').map((o) => `${o.kind}/${o.id}`)).toEqual([
      'binding/d-a',
      'binding/d-b',
      'model/m-default',
    ]);
    expect(repo.snapshotOfTenant('other').resources.models.map((m) => m.id)).toEqual(['m-other']);
    // Reading (and parsing) every binding to keep the default tenant's two took ~150 ms here; now an index range.
    const ms = timed(() => {
      for (let i = 0; i < 20; i++) repo.listOfTenant('binding', 'default');
    }).ms;
    expect(ms / 20).toBeLessThan(5);
  });

  it("a run's terminal event is found without reading the run's events", () => {
    const store = fresh();
    const { sessionId } = store.ensureSession('default', 'b', 'c');
    const text = 'x'.repeat(3000);
    for (let i = 0; i < 4000; i += 200)
      store.transaction(() => {
        for (let j = i; j < i + 200; j++)
          store.append(sessionId, [
            {
              type: 'run.update',
              runId: 'run_big',
              data: { runnerSeq: j + 1, update: { kind: 'message.delta', text } },
            },
          ]);
      });
    expect(terminalSeqOfRun(store, 'run_big')).toBeUndefined();
    // 12 MB of one run's events: the old lookup read them all, ~100 ms per stream opening; now one index probe.
    const ms = timed(() => {
      for (let i = 0; i < 20; i++) terminalSeqOfRun(store, 'run_big');
    }).ms;
    expect(ms / 20).toBeLessThan(5);
    const [ended] = store.append(sessionId, [
      { type: 'run.ended', runId: 'run_big', data: { status: 'completed', reason: 'done', exitCode: 0, signal: null } },
    ]);
    store.append(sessionId, [{ type: 'run.interrupted', runId: 'run_big', data: { reason: 'late', killedPid: null } }]);
    expect(terminalSeqOfRun(store, 'run_big')).toBe(ended!.seq);
    expect(terminalSeqOfRun(store, 'run_other')).toBeUndefined();
  });
});
