// The capability_grants table (host/state/capabilityGrants.ts) on real SQLite: which grants are live for a run, a
// once grant used once whichever connection asks, revocation tenant-scoped and audited, keyset listing.
import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { verifyAudit } from '../../../host/audit/verify.js';
import { auditTable } from '../../../host/state/auditTable.js';
import {
  capabilityGrantById,
  insertCapabilityGrant,
  listCapabilityGrants,
  liveCapabilityGrants,
  revokeCapabilityGrant,
  useOnceGrant,
  type NewCapabilityGrant,
} from '../../../host/state/capabilityGrants.js';
import { dbOf, Store } from '../../../host/state/store.js';
import { rawDb } from '../../helpers/rawDb.js';
import { sameStore, tempStore } from '../../helpers/store.js';

const opened: { store: Store; dataDir: string }[] = [];
const extra: Store[] = [];
function open() {
  const s = tempStore();
  opened.push(s);
  return s;
}
afterEach(() => {
  for (const store of extra.splice(0)) store.close();
  for (const { store, dataDir } of opened.splice(0)) {
    store.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

const T0 = '2026-12-01T10:00:00.000Z';
const at = (minutes: number) => new Date(Date.parse(T0) + minutes * 60_000).toISOString();
let n = 0;
function grant(over: Partial<NewCapabilityGrant> = {}): NewCapabilityGrant {
  n += 1;
  return {
    capability: 'exec',
    scope: { kind: 'command', value: 'npm test' },
    lifetime: 'run',
    tenant: 'acme',
    bindingId: 'helper',
    sessionId: 'ses_1',
    runId: 'run_1',
    grantor: 'user:ada',
    createdAt: at(n / 1000),
    ...over,
  };
}
const run1 = { tenant: 'acme', bindingId: 'helper', sessionId: 'ses_1', runId: 'run_1', now: at(1) };
const ids = (rows: { id: string }[]) => rows.map((r) => r.id);

describe('capability grants', () => {
  it('a stored grant reads back in the shared shape; a session or binding grant drops what it does not scope', () => {
    const { store } = open();
    const run = insertCapabilityGrant(store, grant({ approvalId: 'apr_1', expiresAt: at(60) }));
    expect(run.id).toMatch(/^grt_[0-9a-f-]{36}$/);
    expect(capabilityGrantById(store, run.id)).toEqual({
      id: run.id,
      capability: 'exec',
      scope: { kind: 'command', value: 'npm test' },
      lifetime: 'run',
      tenant: 'acme',
      bindingId: 'helper',
      sessionId: 'ses_1',
      runId: 'run_1',
      grantor: 'user:ada',
      approvalId: 'apr_1',
      createdAt: run.createdAt,
      expiresAt: at(60),
    });
    const session = insertCapabilityGrant(store, grant({ lifetime: 'session' }));
    expect(session.runId).toBeUndefined();
    expect(session.sessionId).toBe('ses_1');
    const binding = insertCapabilityGrant(store, grant({ lifetime: 'binding' }));
    expect([binding.sessionId, binding.runId]).toEqual([undefined, undefined]);
    expect(capabilityGrantById(store, run.id, 'beta')).toBeUndefined();
  });

  it('refuses a grant missing the session or run its lifetime needs, naming the field', () => {
    const { store } = open();
    expect(() => insertCapabilityGrant(store, grant({ lifetime: 'session', sessionId: undefined }))).toThrow(
      /sessionId is required for a session grant/,
    );
    expect(() => insertCapabilityGrant(store, grant({ lifetime: 'once', runId: undefined }))).toThrow(
      /runId is required for a once grant/,
    );
    expect(() => insertCapabilityGrant(store, grant({ lifetime: 'forever' as never }))).toThrow(/lifetime must be/);
    expect(rawDb(store).prepare('SELECT count(*) FROM capability_grants').pluck().get()).toBe(0);
  });

  it('live grants: binding for any session, session for its session, run and once for their run', () => {
    const { store } = open();
    const binding = insertCapabilityGrant(store, grant({ lifetime: 'binding' }));
    const session = insertCapabilityGrant(store, grant({ lifetime: 'session' }));
    const run = insertCapabilityGrant(store, grant({ lifetime: 'run' }));
    const once = insertCapabilityGrant(store, grant({ lifetime: 'once' }));
    insertCapabilityGrant(store, grant({ lifetime: 'binding', bindingId: 'other' }));
    insertCapabilityGrant(store, grant({ lifetime: 'binding', tenant: 'beta' }));
    expect(ids(liveCapabilityGrants(store, run1))).toEqual(ids([binding, session, run, once]));
    expect(ids(liveCapabilityGrants(store, { ...run1, runId: 'run_2' }))).toEqual(ids([binding, session]));
    expect(ids(liveCapabilityGrants(store, { ...run1, sessionId: 'ses_2', runId: 'run_3' }))).toEqual(ids([binding]));
    expect(liveCapabilityGrants(store, { ...run1, tenant: 'beta', bindingId: 'helper' })).toHaveLength(1);
  });

  it('revoked, expired and used grants are not live', () => {
    const { store } = open();
    const revoked = insertCapabilityGrant(store, grant({ lifetime: 'binding' }));
    const expiring = insertCapabilityGrant(store, grant({ lifetime: 'binding', expiresAt: at(2) }));
    const once = insertCapabilityGrant(store, grant({ lifetime: 'once' }));
    expect(revokeCapabilityGrant(store, revoked.id, { by: 'user:bob', at: at(0.5) })).toMatchObject({ ok: true });
    expect(ids(liveCapabilityGrants(store, run1))).toEqual(ids([expiring, once]));
    expect(useOnceGrant(store, once.id, at(1))).toBe(true);
    expect(ids(liveCapabilityGrants(store, run1))).toEqual(ids([expiring]));
    expect(liveCapabilityGrants(store, { ...run1, now: at(2) })).toEqual([]);
  });

  it('a once grant is used exactly once, across connections; other lifetimes and dead grants are never used up', () => {
    const { store } = open();
    const other = Store.open(sameStore(store));
    extra.push(other);
    const once = insertCapabilityGrant(store, grant({ lifetime: 'once' }));
    const uses = [
      useOnceGrant(store, once.id, at(1)),
      useOnceGrant(other, once.id, at(1)),
      useOnceGrant(store, once.id, at(2)),
    ];
    expect(uses).toEqual([true, false, false]);
    expect(capabilityGrantById(store, once.id)!.usedAt).toBe(at(1));
    const run = insertCapabilityGrant(store, grant({ lifetime: 'run' }));
    expect(useOnceGrant(store, run.id, at(1))).toBe(false);
    const expired = insertCapabilityGrant(store, grant({ lifetime: 'once', expiresAt: at(1) }));
    expect(useOnceGrant(store, expired.id, at(1))).toBe(false);
    const revoked = insertCapabilityGrant(store, grant({ lifetime: 'once' }));
    revokeCapabilityGrant(store, revoked.id, { by: 'user:bob', at: at(0.5) });
    expect(useOnceGrant(store, revoked.id, at(1))).toBe(false);
    expect(useOnceGrant(store, 'grt_nope', at(1))).toBe(false);
    const used = rawDb(store).prepare("SELECT actor, data FROM audit WHERE type = 'grant.used'").all() as {
      actor: string;
      data: string;
    }[];
    expect(used.map((u) => [u.actor, (JSON.parse(u.data) as { grantId: string }).grantId])).toEqual([
      ['host', once.id],
    ]);
  });

  it("revocation: another tenant's grant is not_found; twice is already_revoked; audited once", () => {
    const { store } = open();
    const g = insertCapabilityGrant(store, grant({ lifetime: 'session' }));
    expect(revokeCapabilityGrant(store, g.id, { by: 'api:x', at: at(1), tenant: 'beta' })).toEqual({
      ok: false,
      code: 'not_found',
    });
    expect(revokeCapabilityGrant(store, 'grt_nope', { by: 'api:x', at: at(1) })).toEqual({
      ok: false,
      code: 'not_found',
    });
    const r = revokeCapabilityGrant(store, g.id, { by: 'api:x', at: at(1), tenant: 'acme' });
    expect(r).toMatchObject({ ok: true, grant: { revokedAt: at(1), revokedBy: 'api:x' } });
    expect(revokeCapabilityGrant(store, g.id, { by: 'user:bob', at: at(2) })).toMatchObject({
      ok: false,
      code: 'already_revoked',
      grant: { revokedBy: 'api:x' },
    });
    const records = rawDb(store).prepare("SELECT actor FROM audit WHERE type = 'grant.revoked'").pluck().all();
    expect(records).toEqual(['api:x']);
    expect(verifyAudit(auditTable(dbOf(store)), store.key.publicKey)).toMatchObject({ ok: true });
  });

  it('lists in creation order a keyset page at a time, by tenant and binding, live only when asked', () => {
    const { store } = open();
    const a = insertCapabilityGrant(store, grant({ lifetime: 'binding' }));
    const b = insertCapabilityGrant(store, grant({ lifetime: 'session' }));
    const c = insertCapabilityGrant(store, grant({ lifetime: 'binding', tenant: 'beta' }));
    const d = insertCapabilityGrant(store, grant({ lifetime: 'binding', bindingId: 'other' }));
    revokeCapabilityGrant(store, b.id, { by: 'user:bob', at: at(1) });
    const first = listCapabilityGrants(store, { tenant: 'acme', limit: 2 });
    expect(ids(first)).toEqual(ids([a, b]));
    expect(ids(listCapabilityGrants(store, { tenant: 'acme', limit: 2, after: b.id }))).toEqual(ids([d]));
    expect(ids(listCapabilityGrants(store, { tenant: 'acme', live: true, limit: 10, now: at(2) }))).toEqual(
      ids([a, d]),
    );
    expect(ids(listCapabilityGrants(store, { bindingId: 'helper', limit: 10 }))).toEqual(ids([a, b, c]));
    expect(() => listCapabilityGrants(store, { tenant: 'acme', limit: 2, after: c.id })).toThrow(/after: no grant/);
  });
});
