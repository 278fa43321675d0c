/**
 * Canonical JSON for hashing: object keys sorted by code point, no whitespace, integers only
 * (a non-integer or non-finite number is refused: float formatting is where two implementations
 * of a verifier would disagree), `undefined` members dropped. Same input → same bytes.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new TypeError(`canonical JSON allows safe integers only, got ${value}`);
    return String(value);
  }
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  throw new TypeError(`canonical JSON cannot encode a ${typeof value}`);
}

/**
 * Text as SQLite stores it in a text column: a lone UTF-16 surrogate (which JSON from a runner can carry, `"\ud800"`)
 * becomes U+FFFD. The log hashes what it stores, so a record naming one still verifies when it is read back. (Data
 * needs none of this: it is stored as JSON, where `JSON.stringify` escapes a lone surrogate.)
 */
export function wellFormed(text: string): string {
  // String.prototype.toWellFormed (Node 20+) is not in the ES2022 library typings.
  return (text as string & { toWellFormed(): string }).toWellFormed();
}

/** Make a JSON-compatible value hashable: non-integer numbers become strings (e.g. costs). */
export function toCanonicalSafe(value: unknown): unknown {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? value : String(value);
  if (Array.isArray(value)) return value.map(toCanonicalSafe);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([, v]) => v !== undefined)
        .map(([k, v]) => [k, toCanonicalSafe(v)]),
    );
  }
  return value;
}
