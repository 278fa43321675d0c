import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createApiToken,
  listApiTokens,
  revokeApiToken,
  verifyApiToken,
  type ApiTokenVerdict,
} from '../../../host/state/apiTokens.js';
import { Store } from '../../../host/state/store.js';
import { filesContaining } from '../../helpers/canary.js';
import { rawDb } from '../../helpers/rawDb.js';
import { sameStore, tempStore } from '../../helpers/store.js';

const opened: { store: Store; dataDir: string }[] = [];
function open() {
  const s = tempStore();
  opened.push(s);
  return s;
}
afterEach(() => {
  for (const { store, dataDir } of opened.splice(0)) {
    store.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

const refusal = (v: ApiTokenVerdict) => (v.ok ? 'ok' : v.refusal);

describe('API tokens', () => {
  it('a created token verifies as its tenant and role; the store keeps only the hash of its secret', () => {
    const { store, dataDir } = open();
    const { token, info } = createApiToken(store, { tenant: 'acme', role: 'platform', name: 'tg', by: 'user:ada' });
    expect(token).toMatch(/^pdk_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/);
    expect(verifyApiToken(store, token)).toEqual({
      ok: true,
      principal: { tokenId: info.id, tenant: 'acme', role: 'platform' },
    });
    // The secret is the last 43 characters: base64url has `_` in it, so splitting at the last `_` could leave a
    // fragment of one or two characters, found in any file (CI saw it in the database and both key files).
    const secret = token.slice(-43);
    store.close();
    expect(filesContaining(dataDir, secret)).toEqual([]);
    expect(filesContaining(dataDir, token)).toEqual([]);
  });

  it('creation and revocation are audited, without the secret', () => {
    const { store } = open();
    const { token, info } = createApiToken(store, { tenant: 'acme', role: 'admin', by: 'user:ada' });
    revokeApiToken(store, info.id, 'user:bob');
    revokeApiToken(store, info.id, 'user:bob'); // again: no second record
    const rows = rawDb(store)
      .prepare("SELECT type, actor, data FROM audit WHERE type LIKE 'token.%' ORDER BY seq")
      .all() as { type: string; actor: string; data: string }[];
    expect(rows.map((r) => [r.type, r.actor])).toEqual([
      ['token.created', 'user:ada'],
      ['token.revoked', 'user:bob'],
    ]);
    for (const r of rows) expect(r.data).not.toContain(token.slice(17));
  });

  it('refuses missing, malformed, unknown, wrong-secret, revoked and expired tokens, each with its reason', () => {
    const { store } = open();
    const now = new Date('2026-12-01T00:00:00Z');
    const a = createApiToken(store, { tenant: 'acme', role: 'platform', by: 'u' }, now);
    const b = createApiToken(
      store,
      { tenant: 'acme', role: 'platform', expiresAt: new Date('2026-12-02T00:00:00Z'), by: 'u' },
      now,
    );
    const secretOf = (t: string) => t.slice(17);
    const otherSecret = secretOf(b.token);
    expect(refusal(verifyApiToken(store, undefined, now))).toBe('missing');
    expect(refusal(verifyApiToken(store, '', now))).toBe('missing');
    for (const bad of [
      'Bearer ' + a.token,
      a.token + ' ',
      ' ' + a.token,
      a.token + '\n',
      a.token.toUpperCase(),
      a.token.replace('pdk_', 'pdk-'),
      a.token.slice(0, -1),
      a.token + 'A',
      `pdk_${a.info.id}_${'\u0410'.repeat(43)}`,
      `pdk_${a.info.id}_${'='.repeat(43)}`,
      'x'.repeat(100_000),
      'pdk_' + a.info.id,
    ])
      expect(refusal(verifyApiToken(store, bad, now)), JSON.stringify(bad.slice(0, 80))).toBe('malformed');
    // The right shape, but a secret of another token, or an id nobody has.
    expect(refusal(verifyApiToken(store, `pdk_${a.info.id}_${otherSecret}`, now))).toBe('unknown');
    expect(refusal(verifyApiToken(store, `pdk_000000000000_${secretOf(a.token)}`, now))).toBe('unknown');
    // Expiry is exclusive of its instant.
    expect(refusal(verifyApiToken(store, b.token, new Date('2026-12-01T23:59:59.999Z')))).toBe('ok');
    expect(refusal(verifyApiToken(store, b.token, new Date('2026-12-02T00:00:00Z')))).toBe('expired');
    revokeApiToken(store, a.info.id, 'u', now);
    expect(refusal(verifyApiToken(store, a.token, now))).toBe('revoked');
  });

  it('a revocation by another connection on the same data folder is seen by the next verification', () => {
    const { store } = open();
    const { token, info } = createApiToken(store, { tenant: 'acme', role: 'platform', by: 'u' });
    expect(refusal(verifyApiToken(store, token))).toBe('ok');
    const other = Store.open(sameStore(store));
    revokeApiToken(other, info.id, 'u');
    other.close();
    expect(refusal(verifyApiToken(store, token))).toBe('revoked');
  });

  it('refuses bad tenants, roles and expiries at creation, storing nothing', () => {
    const { store } = open();
    const now = new Date();
    for (const tenant of ['', 'Acme', 'a b', '-a', 'a'.repeat(64), 'ａcme', 'a\n', 'a/b'])
      expect(() => createApiToken(store, { tenant, role: 'platform', by: 'u' }), tenant).toThrow(RangeError);
    expect(() => createApiToken(store, { tenant: 'a', role: 'root' as never, by: 'u' })).toThrow(RangeError);
    expect(() => createApiToken(store, { tenant: 'a', role: 'admin', expiresAt: now, by: 'u' }, now)).toThrow('future');
    expect(listApiTokens(store)).toEqual([]);
  });

  it('lists tokens without secrets or hashes, per tenant', () => {
    const { store } = open();
    createApiToken(store, { tenant: 'a', role: 'platform', by: 'u' });
    createApiToken(store, { tenant: 'b', role: 'admin', by: 'u' });
    expect(
      listApiTokens(store)
        .map((t) => t.tenant)
        .sort(),
    ).toEqual(['a', 'b']);
    expect(listApiTokens(store, { tenant: 'b' }).map((t) => t.role)).toEqual(['admin']);
    for (const t of listApiTokens(store)) expect(Object.keys(t)).not.toContain('secret_hash');
  });
});
