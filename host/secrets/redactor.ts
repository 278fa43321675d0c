import { FormIndex, MIN_FORM_LENGTH, type Span } from './formIndex.js';
import { secretForms } from './secretForms.js';
import { scanShapes } from './shapeScan.js';

/** What a redacted secret is replaced with. */
export const REDACTED = '[REDACTED]';
/** Shorter values are not registered: they would match ordinary text. */
const MIN_SECRET_LENGTH = MIN_FORM_LENGTH;
/** Shortest text a credential shape can match (`a://b:c@`); shorter text holds no shape and no form. */
const MIN_SHAPE_LENGTH = 8;
/**
 * Deepest nesting {@link Redactor.value} copies; a container deeper than this is replaced by
 * {@link TOO_DEEP}. Well under SQLite's JSON depth limit (1000) and V8's recursive JSON.stringify,
 * so whatever the redactor returns can be stored and printed.
 */
export const REDACT_MAX_DEPTH = 256;
/** What replaces a container nested deeper than {@link REDACT_MAX_DEPTH}. */
export const TOO_DEEP = `[REDACTED: nested deeper than ${REDACT_MAX_DEPTH} levels]`;
/**
 * Text a stream holds back at least: open-ended credential shapes (`sk-…`, bearer) up to this long are caught whole.
 */
const MIN_HOLDBACK = 200;
/** Most a stream holds back while one open-ended shape keeps growing; past it, the match is redacted as far as seen. */
const MAX_HOLDBACK = 64 * 1024;

/**
 * Removes secrets from text and values before anything is stored, logged or streamed: every
 * secret value the host holds (registered with {@link add}, in all its written forms, see
 * secretForms.ts) and generic credential shapes (provider keys, tokens, private keys, JWTs,
 * bearer headers, passwords in URLs).
 */
export class Redactor {
  /** Every registered value with its forms, so forgetting it drops exactly what it added. */
  private readonly values = new Map<string, string[]>();
  /** The forms of every registered value, counted by value (two values may share a form). */
  private readonly forms = new FormIndex();
  /** The same forms in lower case, for {@link containsIgnoringCase}; made on first use, then kept in step. */
  private folded: FormIndex | undefined;
  /** Values known while held ({@link hold}), with their number of holders. */
  private readonly holders = new Map<string, number>();
  /** Values registered with {@link add}: known until {@link forget}, whoever holds or releases them. */
  private readonly registered = new Set<string>();

  /** Register a secret value (ignored when shorter than 8 characters); it stays known until {@link forget}. */
  add(value: string | undefined): void {
    if (!value || value.length < MIN_SECRET_LENGTH) return;
    // Registered for good even when somebody holds it already: their release must not forget it (an outside attack:
    // a run's end forgot an MCP upstream's header another run had just registered).
    this.registered.add(value);
    this.know(value);
  }

  /** Know a value's forms (once; counted per form in the index, so a form two values share stays while either does). */
  private know(value: string): void {
    if (this.values.has(value)) return;
    const forms = secretForms(value);
    this.values.set(value, forms);
    for (const form of forms) {
      this.forms.add(form);
      this.folded?.add(form.toLowerCase());
    }
  }

  /**
   * Stop knowing a value that can no longer do harm (a revoked run token), so the set does not grow forever. A form
   * another registered value also has stays known, and so does a value somebody still holds ({@link hold}).
   */
  forget(value: string | undefined): void {
    if (value === undefined) return;
    this.registered.delete(value);
    if (this.holders.has(value)) return;
    const forms = this.values.get(value);
    if (!forms) return;
    this.values.delete(value);
    for (const form of forms) {
      this.forms.remove(form);
      this.folded?.remove(form.toLowerCase());
    }
  }

  /**
   * Know `value` for as long as its holder needs it (a run that read it from a secret file); returns the release.
   * Holders are counted: the value is forgotten when the last one releases it, unless it is registered with
   * {@link add} (a configured secret, or a value registered while held). A value that is only a form of another one
   * (base64 of a held secret) is held as a value of its own: its own forms are known, and it outlives the other.
   */
  hold(value: string): () => void {
    if (value.length < MIN_SECRET_LENGTH) return () => undefined;
    const holders = this.holders.get(value) ?? 0;
    this.holders.set(value, holders + 1);
    this.know(value);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = this.holders.get(value)! - 1;
      if (left > 0) return void this.holders.set(value, left);
      this.holders.delete(value);
      if (!this.registered.has(value)) this.forget(value);
    };
  }

  /** Number of registered forms (for tests and `doctor`). */
  get size(): number {
    return this.forms.size;
  }

  /** How many trailing characters a stream must hold back: the longest form a secret can take, less one. */
  get holdback(): number {
    return Math.max(this.forms.longest, MIN_HOLDBACK) - 1;
  }

  /**
   * Does the text hold a secret form or a credential shape, letters compared without case? For names that are
   * case-insensitive where they go (a host name a resolver reads): `SK-LIVE-…` there is `sk-live-…`.
   */
  containsIgnoringCase(input: string): boolean {
    const lower = input.toLowerCase();
    if (this.forms.size > 0 && this.foldedForms().occursIn(lower)) return true;
    return [input, lower, input.toUpperCase()].some((text) => this.spans(text).length > 0);
  }

  /** Redact one string. */
  text(input: string): string {
    if (input.length < MIN_SHAPE_LENGTH) return input;
    const spans = this.spans(input);
    return spans.length === 0 ? input : apply(input, spans, input.length);
  }

  /**
   * Redact every string (and every object key) in a JSON-like value: a new value, the input is
   * not changed. The walk keeps an explicit stack (no recursion, linear in the input's size);
   * a container nested deeper than {@link REDACT_MAX_DEPTH} becomes the string {@link TOO_DEEP}.
   * `onRedacted` hears (once) that something was replaced.
   */
  value<T>(input: T, onRedacted?: () => void): T {
    let redacted = false;
    const root: { v?: unknown } = {};
    const work: [source: unknown, target: object, key: string | number, depth: number][] = [[input, root, 'v', 0]];
    while (work.length > 0) {
      const [source, target, key, depth] = work.pop()!;
      let copy: unknown;
      if (typeof source === 'string') {
        copy = this.text(source);
        if (copy !== source) redacted = true;
      } else if (source === null || typeof source !== 'object') copy = source;
      else if (depth >= REDACT_MAX_DEPTH) {
        copy = TOO_DEEP;
        redacted = true;
      } else if (Array.isArray(source)) {
        const list: unknown[] = new Array(source.length);
        for (let i = 0; i < source.length; i++) work.push([source[i], list, i, depth + 1]);
        copy = list;
      } else {
        const object = {};
        for (const [k, v] of Object.entries(source)) {
          const name = this.text(k);
          if (name !== k) redacted = true;
          define(object, name, undefined); // the key's place now, so the copy keeps the input's key order
          work.push([v, object, name, depth + 1]);
        }
        copy = object;
      }
      define(target, key, copy);
    }
    if (redacted) onRedacted?.();
    return root.v as T;
  }

  /**
   * A redactor for text cut into chunks: a secret split across chunks is still caught, and
   * what `push` returns, concatenated, is safe. It holds back the last {@link holdback}
   * characters (and any match that reaches into them) until more text or `end`.
   */
  stream(): { push(chunk: string): string; end(): string } {
    let carry = '';
    return {
      push: (chunk) => {
        const text = carry + chunk;
        const keep = this.holdback;
        if (text.length <= keep) {
          carry = text;
          return '';
        }
        const spans = this.spans(text);
        let cut = text.length - keep;
        // A match crossing the cut may grow with the next chunk (an open-ended shape) or be the
        // start of a longer form: hold it back whole, unless that would hold back too much.
        const crossing = spans.find(([start, end]) => start < cut && end > cut);
        if (crossing) cut = text.length - crossing[0] <= MAX_HOLDBACK ? crossing[0] : crossing[1];
        carry = text.slice(cut);
        return apply(text, spans, cut);
      },
      end: () => {
        const rest = this.text(carry);
        carry = '';
        return rest;
      },
    };
  }

  /** The lower-case forms, made from the registered values on first use. */
  private foldedForms(): FormIndex {
    if (!this.folded) {
      this.folded = new FormIndex();
      for (const forms of this.values.values()) for (const form of forms) this.folded.add(form.toLowerCase());
    }
    return this.folded;
  }

  /**
   * A detector over text that arrives in chunks: true once a known secret form is in what it has seen, across chunk
   * boundaries (it keeps the last characters a form could start in). Credential shapes do not count: the bytes may
   * be random (a TLS stream), where a loose shape would match by chance.
   */
  watchKnown(): (chunk: string) => boolean {
    let carry = '';
    return (chunk) => {
      const text = carry + chunk;
      const longest = this.forms.longest;
      carry = longest > 1 ? text.slice(-(longest - 1)) : '';
      return this.forms.occursIn(text);
    };
  }

  /** Every range of `text` that holds a known secret form or a credential shape, merged, in order. */
  private spans(text: string): Span[] {
    const found: Span[] = [];
    this.forms.scan(text, found);
    scanShapes(text, found);
    if (found.length < 2) return found;
    found.sort((a, b) => a[0] - b[0]);
    const merged: Span[] = [found[0]!];
    for (const [start, end] of found.slice(1)) {
      const last = merged.at(-1)!;
      if (start <= last[1]) last[1] = Math.max(last[1], end);
      else merged.push([start, end]);
    }
    return merged;
  }
}

/** `text` up to `upTo` with every span that ends there or before replaced by {@link REDACTED}. */
function apply(text: string, spans: Span[], upTo: number): string {
  let out = '';
  let at = 0;
  for (const [start, end] of spans) {
    if (end > upTo) break;
    out += text.slice(at, start) + REDACTED;
    at = end;
  }
  return out + text.slice(at, upTo);
}

/**
 * Set an own, enumerable property (also for the key `__proto__`, which plain assignment would turn into a prototype).
 */
function define(target: object, key: string | number, value: unknown): void {
  if (key === '__proto__')
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else (target as Record<string | number, unknown>)[key] = value;
}
