/**
 * API tokens of `paddock serve` (docs/http-api.md, "Tokens, tenants, roles"): created, listed, revoked and verified
 * here; the store keeps the SHA-256 of each token's secret, never the secret.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { isTenant, TENANT_PATTERN } from '../config/tenant.js';
import { dbOf, type Store } from './store.js';

/** What a token may do (docs/http-api.md has the table; `viewer` reads what its tenant's admin reads, no more). */
export const API_ROLES = ['platform', 'approver', 'admin', 'viewer'] as const;
/** A token's role. */
export type ApiRole = (typeof API_ROLES)[number];

/** The prefix every token starts with (so a leaked one is recognisable, e.g. by secret scanners). */
const PREFIX = 'pdk_';
/** `pdk_<12 hex id>_<43 base64url chars of a 32-byte secret>`. */
const TOKEN_SHAPE = /^pdk_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$/;
/** How long a token's `last_used_at` may lag behind its use (a write per request would serialise readers). */
const LAST_USED_RESOLUTION_MS = 60_000;

/** A token as listed: everything but its secret. */
export interface ApiTokenInfo {
  id: string;
  tenant: string;
  role: ApiRole;
  name: string;
  createdAt: string;
  createdBy: string;
  expiresAt: string | null;
  revokedAt: string | null;
  revokedBy: string | null;
  lastUsedAt: string | null;
}

/** Who a verified token acts as. */
export interface ApiPrincipal {
  tokenId: string;
  tenant: string;
  role: ApiRole;
}

/** Why a presented token was refused (stable; the server's 401 says which). */
export type ApiTokenRefusal = 'missing' | 'malformed' | 'unknown' | 'expired' | 'revoked';

/** The outcome of {@link verifyApiToken}. */
export type ApiTokenVerdict = { ok: true; principal: ApiPrincipal } | { ok: false; refusal: ApiTokenRefusal };

interface TokenRow {
  id: string;
  tenant: string;
  role: ApiRole;
  name: string;
  secret_hash: Buffer;
  created_at: string;
  created_by: string;
  expires_at: string | null;
  revoked_at: string | null;
  revoked_by: string | null;
  last_used_at: string | null;
}

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest();

const info = (row: TokenRow): ApiTokenInfo => ({
  id: row.id,
  tenant: row.tenant,
  role: row.role,
  name: row.name,
  createdAt: row.created_at,
  createdBy: row.created_by,
  expiresAt: row.expires_at,
  revokedAt: row.revoked_at,
  revokedBy: row.revoked_by,
  lastUsedAt: row.last_used_at,
});

/**
 * Create a token for `tenant` with `role`; returns it in full, the only time it exists outside the caller's
 * hands. Audited (`token.created`, without the secret). Throws `RangeError` on a bad tenant, role or expiry.
 */
export function createApiToken(
  store: Store,
  spec: { tenant: string; role: ApiRole; name?: string; expiresAt?: Date; by: string },
  now = new Date(),
): { token: string; info: ApiTokenInfo } {
  if (!isTenant(spec.tenant))
    throw new RangeError(`tenant must match ${TENANT_PATTERN.source} (got ${JSON.stringify(spec.tenant)})`);
  if (!(API_ROLES as readonly string[]).includes(spec.role))
    throw new RangeError(`role must be one of ${API_ROLES.join(', ')} (got ${JSON.stringify(spec.role)})`);
  if (spec.expiresAt && !(spec.expiresAt.getTime() > now.getTime()))
    throw new RangeError('expiry must be in the future');
  const id = randomBytes(6).toString('hex');
  const secret = randomBytes(32).toString('base64url');
  const row = {
    id,
    tenant: spec.tenant,
    role: spec.role,
    name: spec.name ?? '',
    secret_hash: sha256(secret),
    created_at: now.toISOString(),
    created_by: spec.by,
    expires_at: spec.expiresAt?.toISOString() ?? null,
  };
  store.transaction(() => {
    dbOf(store)
      .prepare(
        'INSERT INTO api_tokens (id, tenant, role, name, secret_hash, created_at, created_by, expires_at) VALUES ' +
          '(@id, @tenant, @role, @name, @secret_hash, @created_at, @created_by, @expires_at)',
      )
      .run(row);
    store.audit.append({
      type: 'token.created',
      actor: spec.by,
      data: { tokenId: id, tenant: row.tenant, role: row.role, name: row.name, expiresAt: row.expires_at },
    });
  });
  return { token: `${PREFIX}${id}_${secret}`, info: info(tokenRow(store, id)!) };
}

function tokenRow(store: Store, id: string): TokenRow | undefined {
  return dbOf(store).prepare('SELECT * FROM api_tokens WHERE id = ?').get(id) as TokenRow | undefined;
}

/** Token `id` as listed (no secret), or undefined; of `tenant` only when given (another tenant's is undefined). */
export function apiTokenInfo(store: Store, id: string, tenant?: string): ApiTokenInfo | undefined {
  const row = tokenRow(store, id);
  return row && (tenant === undefined || row.tenant === tenant) ? info(row) : undefined;
}

/** Every token (no secrets), newest first; of one tenant when given. */
export function listApiTokens(store: Store, filter: { tenant?: string } = {}): ApiTokenInfo[] {
  const rows = (
    filter.tenant === undefined
      ? dbOf(store).prepare('SELECT * FROM api_tokens ORDER BY created_at DESC, id').all()
      : dbOf(store).prepare('SELECT * FROM api_tokens WHERE tenant = ? ORDER BY created_at DESC, id').all(filter.tenant)
  ) as TokenRow[];
  return rows.map(info);
}

/**
 * Revoke a token: refused from then on, by every server on this data folder (they read the store per request).
 * Audited (`token.revoked`). Returns the token as it now is, or undefined when there is no such token (or, with
 * `tenant`, none of that tenant); revoking a revoked token changes nothing and is not audited again.
 */
export function revokeApiToken(
  store: Store,
  id: string,
  by: string,
  now = new Date(),
  scope: { tenant?: string } = {},
): ApiTokenInfo | undefined {
  return store.transaction(() => {
    const row = tokenRow(store, id);
    if (!row || (scope.tenant !== undefined && row.tenant !== scope.tenant)) return undefined;
    if (row.revoked_at === null) {
      dbOf(store)
        .prepare('UPDATE api_tokens SET revoked_at = ?, revoked_by = ? WHERE id = ?')
        .run(now.toISOString(), by, id);
      store.audit.append({ type: 'token.revoked', actor: by, data: { tokenId: id, tenant: row.tenant } });
    }
    return info(tokenRow(store, id)!);
  });
}

/**
 * Check a presented token (the text after `Bearer `): its shape, then its id, then its secret's hash in constant
 * time, then expiry and revocation. A refusal says which check failed and never echoes the token.
 */
export function verifyApiToken(store: Store, presented: string | undefined, now = new Date()): ApiTokenVerdict {
  if (presented === undefined || presented === '') return { ok: false, refusal: 'missing' };
  const shape = TOKEN_SHAPE.exec(presented);
  if (!shape) return { ok: false, refusal: 'malformed' };
  const [, id, secret] = shape as unknown as [string, string, string];
  const row = tokenRow(store, id);
  // An unknown id is compared against a dummy hash too, so timing does not tell known ids from unknown ones.
  const expected = row?.secret_hash ?? UNKNOWN_HASH;
  const matches = timingSafeEqual(sha256(secret), expected);
  if (!row || !matches) return { ok: false, refusal: 'unknown' };
  if (row.revoked_at !== null) return { ok: false, refusal: 'revoked' };
  if (row.expires_at !== null && Date.parse(row.expires_at) <= now.getTime()) return { ok: false, refusal: 'expired' };
  if (row.last_used_at === null || now.getTime() - Date.parse(row.last_used_at) >= LAST_USED_RESOLUTION_MS)
    dbOf(store).prepare('UPDATE api_tokens SET last_used_at = ? WHERE id = ?').run(now.toISOString(), id);
  return { ok: true, principal: { tokenId: row.id, tenant: row.tenant, role: row.role } };
}

/**
 * Whether token `id` may still be used: it exists, is not revoked and has not expired. For what outlives one request
 * (an open SSE stream re-checks its token with this, by id: the secret was checked when the stream opened).
 */
export function apiTokenActive(store: Store, id: string, now = new Date()): boolean {
  const row = tokenRow(store, id);
  if (!row || row.revoked_at !== null) return false;
  return row.expires_at === null || Date.parse(row.expires_at) > now.getTime();
}

const UNKNOWN_HASH = sha256('paddock: no such token');
