// The audit export read both ways (GET /v1/audit/export, `order=desc` for the console's recent records): newest
// first pages walk back with `before` and hold exactly the records the oldest-first pages hold, for each tenant.
import { afterAll, describe, expect, it } from 'vitest';
import { exportAudit } from '../../../host/ops/auditExport.js';
import { ConfigRepo } from '../../../host/state/configRepo.js';
import { tempStore } from '../../helpers/store.js';

const { store } = tempStore();
afterAll(() => store.close());
const repo = new ConfigRepo(store);
// Two tenants' records interleaved: every third binding is beta's.
for (let i = 0; i < 30; i++)
  repo.put(
    'binding',
    `b-${i}`,
    { id: `b-${i}`, runner: 'echo', route: { bot: `b${i}` }, ...(i % 3 === 0 && { tenant: 'beta' }) },
    'user:t',
  );

/** Every seq a tenant's pages give, walking `order` with pages of `limit`. */
function walk(tenant: string, order: 'asc' | 'desc', limit: number): number[] {
  const seqs: number[] = [];
  let cursor: number | undefined;
  for (let pages = 0; pages < 100; pages++) {
    const page = exportAudit(store, tenant, {
      order,
      limit,
      scan: 10_000,
      ...(order === 'desc' ? { before: cursor } : { after: cursor ?? 0 }),
    });
    seqs.push(...page.records.map((r) => r.seq));
    if (!page.more) return seqs;
    cursor = page.next;
  }
  throw new Error('the pages never ended');
}

describe('audit export order', () => {
  it('newest first gives the same records as oldest first, reversed, for each tenant and page size', () => {
    for (const tenant of ['default', 'beta'])
      for (const limit of [1, 4, 1000]) {
        const asc = walk(tenant, 'asc', limit);
        expect(asc.length).toBeGreaterThan(5);
        expect(walk(tenant, 'desc', limit)).toEqual([...asc].reverse());
      }
  });

  it('the first newest-first page starts at the log end, and `before` excludes its own seq', () => {
    const first = exportAudit(store, 'default', { order: 'desc', limit: 3, scan: 10_000 });
    const all = walk('default', 'asc', 1000);
    expect(first.records.map((r) => r.seq)).toEqual(all.slice(-3).reverse());
    const next = exportAudit(store, 'default', { order: 'desc', before: first.next, limit: 1, scan: 10_000 });
    expect(next.records[0]!.seq).toBe(all.at(-4));
    expect(next.records.every((r) => r.tenant === 'default')).toBe(true);
  });
});
