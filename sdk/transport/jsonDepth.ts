/**
 * Deepest nesting of arrays and objects a protocol message may have, counting the JSON-RPC
 * envelope itself as level 1 (so `run/update` → `params` → `update` → `data` leaves about 60
 * levels for a value). Far below SQLite's JSON limit (1000) and the depth at which recursive
 * walks (JSON.stringify, structuredClone, the redactor) overflow the stack (issue 11, item 5).
 */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

/**
 * The nesting depth of a JSON text, by one linear scan without parsing or recursion; it stops as
 * soon as the depth passes `limit` (then it returns `limit + 1`). Works on UTF-8 bytes (no byte of
 * a multi-byte character is ASCII) or on a string. Invalid JSON gives some number; the parser
 * reports the real error.
 */
export function jsonDepth(text: Buffer | string, limit: number): number {
  const bytes = typeof text === 'string' ? Buffer.from(text) : text;
  const length = bytes.length;
  let depth = 0;
  let max = 0;
  for (let i = 0; i < length; i++) {
    const c = bytes[i]!;
    if (c === QUOTE) {
      i = stringEnd(bytes, i);
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      depth++;
      if (depth > max) {
        max = depth;
        if (max > limit) return max;
      }
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) depth--;
  }
  return max;
}

/** Index of the quote closing the string opened at `open` (or the end): a quote after an even run of backslashes. */
function stringEnd(bytes: Buffer, open: number): number {
  let at = open;
  for (;;) {
    at = bytes.indexOf(QUOTE, at + 1);
    if (at === -1) return bytes.length;
    let slashes = 0;
    while (bytes[at - 1 - slashes] === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return at;
  }
}

/**
 * The same JSON text with every array or object deeper than `keep` levels replaced by `null`,
 * by one linear scan: enough to read the envelope (id, method, params.runId) of a message that
 * is too deep to be parsed as a whole.
 */
export function shallowJson(text: string, keep: number): string {
  let out = '';
  let depth = 0;
  let inString = false;
  let kept = 0; // start of the text not yet copied, while at or above `keep`
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      depth++;
      if (depth === keep + 1) out += `${text.slice(kept, i)}null`;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      if (depth === keep + 1) kept = i + 1;
      depth--;
    }
  }
  return depth <= keep ? out + text.slice(kept) : out;
}
