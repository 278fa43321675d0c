// `paddock tokens create|list|revoke` through the real bin: the token is printed once and verifies; the data folder
// never holds it; usage mistakes name every problem and store nothing.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { verifyApiToken } from '../../host/state/apiTokens.js';
import { Store } from '../../host/state/store.js';
import { filesContaining } from '../helpers/canary.js';
import { paddock } from '../helpers/cli.js';

const dataDir = mkdtempSync(join(tmpdir(), 'paddock-tokens-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe('paddock tokens', () => {
  it('create prints the token alone on stdout; it verifies, lists without its secret, and revokes', async () => {
    const created = await paddock(['tokens', 'create', '--tenant', 'acme', '--role', 'platform', '--name', 'tg'], {
      dataDir,
    });
    expect(created.exitCode, created.stderr).toBe(0);
    const token = created.stdout.trim();
    expect(token).toMatch(/^pdk_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/);
    expect(created.stderr).toContain('shown this once');
    const id = token.slice(4, 16);

    const store = Store.open({ dataDir });
    try {
      expect(verifyApiToken(store, token)).toMatchObject({ ok: true, principal: { tenant: 'acme', role: 'platform' } });
    } finally {
      store.close();
    }
    const listed = await paddock(['tokens', 'list', '--json'], { dataDir });
    expect(JSON.parse(listed.stdout)).toMatchObject([{ id, tenant: 'acme', role: 'platform', name: 'tg' }]);
    expect(listed.stdout).not.toContain(token.slice(17));

    const revoked = await paddock(['tokens', 'revoke', id], { dataDir });
    expect(revoked.exitCode, revoked.stderr).toBe(0);
    const again = Store.open({ dataDir });
    try {
      expect(verifyApiToken(again, token)).toEqual({ ok: false, refusal: 'revoked' });
    } finally {
      again.close();
    }
    expect(filesContaining(dataDir, token.slice(17))).toEqual([]);
  }, 60_000);

  it('usage mistakes are refused naming each problem, and store nothing', async () => {
    const fresh = mkdtempSync(join(tmpdir(), 'paddock-tokens-bad-'));
    try {
      const none = await paddock(['tokens', 'create'], { dataDir: fresh });
      expect(none.exitCode).toBe(2);
      expect(none.stderr).toContain('--tenant is required');
      expect(none.stderr).toContain('--role is required');
      for (const args of [
        ['--tenant', 'Acme', '--role', 'platform'],
        ['--tenant', 'a', '--role', 'root'],
        ['--tenant', 'a', '--role', 'admin', '--expires', '0d'],
        ['--tenant', 'a', '--role', 'admin', '--expires', 'tomorrow'],
        ['--tenant', 'a', '--role', 'admin', '--expires', '2020-01-01T00:00:00Z'],
      ]) {
        const r = await paddock(['tokens', 'create', ...args], { dataDir: fresh });
        expect(r.exitCode, args.join(' ')).toBe(2);
        expect(r.stdout).toBe('');
      }
      const listed = await paddock(['tokens', 'list', '--json'], { dataDir: fresh });
      expect(JSON.parse(listed.stdout)).toEqual([]);
      const unknown = await paddock(['tokens', 'revoke', '000000000000'], { dataDir: fresh });
      expect(unknown.exitCode).toBe(2);
      expect(unknown.stderr).toContain('no token 000000000000');
    } finally {
      rmSync(fresh, { recursive: true, force: true });
    }
  }, 60_000);
});
