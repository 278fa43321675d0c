// Migration 13 on a database holding API tokens: api_tokens is rebuilt so its role check admits `viewer`; every
// token is kept as it was (and still verifies); a role outside the four is still refused by the table itself.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createApiToken, listApiTokens, verifyApiToken } from '../../../host/state/apiTokens.js';
import { openDatabase } from '../../../host/state/db.js';
import { builtinMigrations, migrate } from '../../../host/state/migrate.js';
import { Store } from '../../../host/state/store.js';
import { rawDb } from '../../helpers/rawDb.js';

const dataDir = mkdtempSync(join(tmpdir(), 'paddock-migration13-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
const secret = 'A'.repeat(43);
const id = '0123456789ab';

describe('migration 13: the console', () => {
  it('keeps every token through the rebuild, then admits viewer tokens and still refuses unknown roles', () => {
    const db = openDatabase(join(dataDir, 'paddock.db'));
    migrate(
      db,
      builtinMigrations().filter((m) => m.version < 13),
    );
    const insert = db.prepare(
      'INSERT INTO api_tokens (id, tenant, role, name, secret_hash, created_at, created_by, revoked_at) ' +
        "VALUES (?, 'acme', ?, 'kept', ?, '2026-01-01T00:00:00.000Z', 'user:op', ?)",
    );
    expect(() => insert.run('bbbbbbbbbbbb', 'viewer', Buffer.alloc(32), null)).toThrow(/CHECK constraint/);
    insert.run(id, 'admin', createHash('sha256').update(secret).digest(), null);
    insert.run('cccccccccccc', 'platform', Buffer.alloc(32), '2026-01-02T00:00:00.000Z');
    db.close();

    const store = Store.open({ dataDir });
    try {
      expect(verifyApiToken(store, `pdk_${id}_${secret}`)).toMatchObject({ ok: true, principal: { role: 'admin' } });
      expect(listApiTokens(store, { tenant: 'acme' })).toEqual([
        expect.objectContaining({ id, role: 'admin', name: 'kept', createdBy: 'user:op', revokedAt: null }),
        expect.objectContaining({ id: 'cccccccccccc', role: 'platform', revokedAt: '2026-01-02T00:00:00.000Z' }),
      ]);
      const viewer = createApiToken(store, { tenant: 'acme', role: 'viewer', by: 'user:test' });
      expect(verifyApiToken(store, viewer.token)).toMatchObject({ ok: true, principal: { role: 'viewer' } });
      const raw = rawDb(store).prepare(
        'INSERT INTO api_tokens (id, tenant, role, name, secret_hash, created_at, created_by) ' +
          "VALUES ('dddddddddddd', 'acme', 'root', '', zeroblob(32), '', '')",
      );
      expect(() => raw.run()).toThrow(/CHECK constraint/);
    } finally {
      store.close();
    }
  });
});
