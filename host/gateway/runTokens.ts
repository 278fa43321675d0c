import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** What a valid run token stands for. */
export interface RunTokenClaims {
  runId: string;
  sessionId: string;
  bindingId: string;
  runnerId: string;
}

/** Why a presented token was not accepted. */
export type TokenRefusal = { reason: 'missing' | 'unknown' | 'revoked'; runId?: string; why?: string };

const hash = (token: string) => createHash('sha256').update(token).digest();

/**
 * Run-scoped gateway tokens: minted at run start, revoked at the run's result line (or its end). Only SHA-256 digests
 * are
 * kept (a memory dump of the host does not give working tokens of finished runs), and a revoked
 * token is remembered so its refusal can say "the run ended" rather than "unknown".
 */
export class RunTokens {
  private readonly live = new Map<string, RunTokenClaims>();
  private readonly revoked = new Map<string, { runId: string; why: string }>();

  /** A fresh token for a run; the caller must register it with the redactor. */
  mint(claims: RunTokenClaims): string {
    const token = `pdk_run_${randomBytes(32).toString('base64url')}`;
    this.live.set(hash(token).toString('hex'), { ...claims });
    return token;
  }

  /** The claims of a live token, or why it is refused. */
  resolve(token: string | undefined): RunTokenClaims | TokenRefusal {
    if (!token) return { reason: 'missing' };
    const key = hash(token).toString('hex');
    const claims = this.live.get(key);
    if (claims) return claims;
    const ended = this.revoked.get(key);
    return ended ? { reason: 'revoked', runId: ended.runId, why: ended.why } : { reason: 'unknown' };
  }

  /** Revoke every token of a run; `why` ends the refusal's "run <id> …" (the first one is kept). */
  revoke(runId: string, why = 'ended'): void {
    for (const [key, claims] of this.live) {
      if (claims.runId !== runId) continue;
      this.live.delete(key);
      this.revoked.set(key, { runId, why });
    }
    // Bounded memory: the oldest revocations are forgotten (they then read as "unknown").
    while (this.revoked.size > 10_000) this.revoked.delete(this.revoked.keys().next().value!);
  }
}

/** The token a request presents: `x-api-key`, or `Authorization: Bearer`. */
export function presentedToken(headers: Record<string, string | string[] | undefined>): string | undefined {
  const key = headers['x-api-key'];
  if (typeof key === 'string' && key) return key;
  const auth = headers.authorization;
  const match = typeof auth === 'string' ? /^Bearer\s+(\S+)$/i.exec(auth) : null;
  return match?.[1];
}

/** Constant-time comparison of two tokens (for a per-run socket that knows its one token). */
export function sameToken(a: string, b: string): boolean {
  const x = hash(a);
  const y = hash(b);
  return timingSafeEqual(x, y);
}

/** Type guard: did {@link RunTokens.resolve} accept the token? */
export function isClaims(r: RunTokenClaims | TokenRefusal): r is RunTokenClaims {
  return 'runId' in r && 'bindingId' in r;
}
