import { SECRET_SHAPES } from '../bindings/inlineSecrets.js';

/** What a redacted secret is replaced with. */
export const REDACTED = '[REDACTED]';
/** Shorter values are not registered: they would match ordinary text. */
const MIN_SECRET_LENGTH = 8;

/** The credential shapes as global patterns, compiled once (`replace` resets `lastIndex` itself). */
const SHAPES_GLOBAL = SECRET_SHAPES.map(({ pattern }) => new RegExp(pattern.source, `${pattern.flags.replace('g', '')}g`));

/** Every written form of a secret: as is, JSON-escaped, base64 and base64url. */
function forms(value: string): string[] {
  const json = JSON.stringify(value).slice(1, -1);
  const b64 = Buffer.from(value).toString('base64');
  return [...new Set([value, json, b64, b64.replace(/=+$/, ''), Buffer.from(value).toString('base64url')])].filter((f) => f.length >= MIN_SECRET_LENGTH);
}

/**
 * Removes secrets from text and values before anything is stored, logged or streamed: every
 * secret value the host holds (registered with {@link add}, in all its written forms) and
 * generic credential shapes (provider keys, tokens, private keys, JWTs, bearer headers).
 */
export class Redactor {
  private readonly known = new Set<string>();
  private longest = 0;
  private pattern: RegExp | undefined;

  /** Register a secret value (ignored when shorter than 8 characters). */
  add(value: string | undefined): void {
    if (!value || value.length < MIN_SECRET_LENGTH) return;
    for (const form of forms(value)) {
      if (this.known.has(form)) continue;
      this.known.add(form);
      this.longest = Math.max(this.longest, form.length);
    }
    this.pattern = undefined;
  }

  /** Stop knowing a value that can no longer do harm (a revoked run token), so the set does not grow forever. */
  forget(value: string | undefined): void {
    if (!value) return;
    for (const form of forms(value)) this.known.delete(form);
    this.longest = Math.max(0, ...[...this.known].map((f) => f.length));
    this.pattern = undefined;
  }

  /** Number of registered forms (for tests and `doctor`). */
  get size(): number {
    return this.known.size;
  }

  /** Redact one string. */
  text(input: string): string {
    let out = input;
    if (this.known.size > 0) {
      // Longest first, so a secret containing another is replaced whole.
      this.pattern ??= new RegExp([...this.known].sort((a, b) => b.length - a.length).map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'g');
      out = out.replace(this.pattern, REDACTED);
    }
    for (const pattern of SHAPES_GLOBAL) out = out.replace(pattern, REDACTED);
    return out;
  }

  /** Redact every string in a JSON-like value (a new value; the input is not changed). */
  value<T>(input: T): T {
    const walk = (v: unknown): unknown => {
      if (typeof v === 'string') return this.text(v);
      if (Array.isArray(v)) return v.map(walk);
      if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
      return v;
    };
    return walk(input) as T;
  }

  /**
   * A redactor for a stream cut into chunks: a secret split across two chunks is still caught.
   * `push` returns what is safe to emit now; `end` flushes the rest.
   */
  stream(): { push(chunk: string): string; end(): string } {
    let carry = '';
    const keep = () => Math.max(this.longest, 200) - 1;
    return {
      push: (chunk) => {
        const text = carry + chunk;
        if (text.length <= keep()) {
          carry = text;
          return '';
        }
        // Redact the whole window, then hold back its end: it may be the start of a secret.
        const redacted = this.text(text);
        const cut = Math.max(0, redacted.length - keep());
        carry = redacted.slice(cut);
        return redacted.slice(0, cut);
      },
      end: () => {
        const rest = this.text(carry);
        carry = '';
        return rest;
      },
    };
  }
}
