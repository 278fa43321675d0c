/** Limits of {@link StreamQuota} (docs/http-api.md, SSE). */
export interface StreamQuotaOptions {
  /** Streams one token may hold open at once (`serve --max-streams-per-token`). */
  perToken: number;
  /**
   * Streams the tokens of one tenant may hold open at once, together (`serve --max-streams-per-tenant`; default half
   * of `total`, at least `perToken`): one tenant's tokens cannot take every place of the server.
   */
  perTenant?: number;
  /** Streams the server holds open at once, all tokens together (`serve --max-streams`). */
  total: number;
  /** How often the token of every open stream is checked again (revoked or expired → its streams end). */
  recheckMs: number;
}

/** The defaults of {@link StreamQuotaOptions}. */
export const STREAM_QUOTA_DEFAULTS: StreamQuotaOptions = { perToken: 16, total: 256, recheckMs: 1000 };

/** Seconds a client refused `too_many_streams` is told to wait (streams end when their clients leave). */
export const STREAMS_RETRY_AFTER_SECONDS = 5;

/** What a refused client is told: which cap, and what to do. */
export function refusalDetail(refusal: StreamRefusal): string {
  switch (refusal.scope) {
    case 'token':
      return `this token already holds ${refusal.limit} open streams (the most one token may); close one first`;
    case 'tenant':
      return (
        `the tokens of this tenant already hold ${refusal.limit} open streams (the most one tenant may); ` +
        'close one first'
      );
    default:
      return `the server already holds ${refusal.limit} open streams (the most it serves); retry later`;
  }
}

/** The per-tenant cap {@link StreamQuota} applies: the one given, else half the total but at least the per-token. */
export function perTenantCap(options: StreamQuotaOptions): number {
  return options.perTenant ?? Math.max(Math.floor(options.total / 2), options.perToken);
}

/** An admitted stream's place in the quota. */
export interface StreamLease {
  /** How to end the stream when its token stops being valid (call once the stream is served). */
  attach(end: () => void): void;
  /** Give the place back (the response closed); idempotent. */
  release(): void;
}

/** Why a stream was refused: which cap, and its value. */
export interface StreamRefusal {
  scope: 'token' | 'tenant' | 'server';
  limit: number;
}

interface Held {
  end?: () => void;
}

/**
 * The open streams of one server (SSE routes, OpenAI-compatible completions) counted per token, per tenant and in
 * total, and kept only while their token is valid: a timer (held only while a stream is open) checks each token with
 * open streams every `recheckMs` and ends the streams of one that was revoked or expired since — by any process on
 * the data folder. Limits are per server process, like the request rate.
 */
export class StreamQuota {
  private readonly byToken = new Map<string, Set<Held>>();
  private readonly byTenant = new Map<string, number>();
  private readonly perTenant: number;
  private count = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly options: StreamQuotaOptions,
    /** Whether the token may still be used; a throw (the store closing) counts as yes: the stop ends the streams. */
    private readonly tokenActive: (tokenId: string) => boolean,
  ) {
    for (const key of ['perToken', 'total', 'recheckMs'] as const)
      if (!(Number.isSafeInteger(options[key]) && options[key] >= 1))
        throw new RangeError(`${key} must be a whole number ≥ 1, got ${options[key]}`);
    this.perTenant = perTenantCap(options);
    if (!(Number.isSafeInteger(this.perTenant) && this.perTenant >= 1))
      throw new RangeError(`perTenant must be a whole number ≥ 1, got ${options.perTenant}`);
  }

  /** Admit one more stream of `tokenId` (of `tenant`), or say which cap it would pass. */
  admit(tokenId: string, tenant: string): { ok: true; lease: StreamLease } | ({ ok: false } & StreamRefusal) {
    const held = this.byToken.get(tokenId);
    if ((held?.size ?? 0) >= this.options.perToken) return { ok: false, scope: 'token', limit: this.options.perToken };
    const ofTenant = this.byTenant.get(tenant) ?? 0;
    if (ofTenant >= this.perTenant) return { ok: false, scope: 'tenant', limit: this.perTenant };
    if (this.count >= this.options.total) return { ok: false, scope: 'server', limit: this.options.total };
    const entry: Held = {};
    const set = held ?? new Set<Held>();
    set.add(entry);
    this.byToken.set(tokenId, set);
    this.byTenant.set(tenant, ofTenant + 1);
    this.count += 1;
    if (!this.timer) {
      this.timer = setInterval(() => this.recheck(), this.options.recheckMs);
      this.timer.unref(); // the server's listener keeps the process alive, never this timer
    }
    let released = false;
    return {
      ok: true,
      lease: {
        attach: (end) => {
          entry.end = end;
        },
        release: () => {
          if (released) return;
          released = true;
          set.delete(entry);
          if (set.size === 0 && this.byToken.get(tokenId) === set) this.byToken.delete(tokenId);
          const left = (this.byTenant.get(tenant) ?? 1) - 1;
          if (left > 0) this.byTenant.set(tenant, left);
          else this.byTenant.delete(tenant);
          this.count -= 1;
          if (this.count === 0) {
            clearInterval(this.timer);
            this.timer = undefined;
          }
        },
      },
    };
  }

  /** Streams open now: in total, and of `tokenId` when given. */
  open(tokenId?: string): number {
    return tokenId === undefined ? this.count : (this.byToken.get(tokenId)?.size ?? 0);
  }

  /** Streams the tokens of `tenant` hold open now. */
  openOfTenant(tenant: string): number {
    return this.byTenant.get(tenant) ?? 0;
  }

  /** Whether the recheck timer is held (tests: released with the last stream). */
  get checking(): boolean {
    return this.timer !== undefined;
  }

  /** End the streams of every token that is no longer valid (the timer's tick; public for tests). */
  recheck(): void {
    for (const [tokenId, set] of [...this.byToken]) {
      let active: boolean;
      try {
        active = this.tokenActive(tokenId);
      } catch {
        continue;
      }
      if (!active) for (const entry of [...set]) entry.end?.();
    }
  }
}
