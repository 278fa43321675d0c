import { BlockTrie, BLOCK } from './blockTrie.js';

/** A half-open range of text `[start, end)`. */
export type Span = [start: number, end: number];

/** Shortest string the index holds: every secret form is at least this long (secretForms.ts). */
export const MIN_FORM_LENGTH = BLOCK;
/** Length of the character grams the filter hashes. */
const GRAM = 4;
/**
 * Distance between the text positions the scan samples. Any occurrence of a form covers MIN_FORM_LENGTH characters, so
 * one sampled gram lies wholly inside its first MIN_FORM_LENGTH characters, at an offset 0…STEP-1 from its start.
 */
const STEP = MIN_FORM_LENGTH - GRAM + 1;
/** Fibonacci hashing's multiplier: the top bits of the product depend on every bit of the gram. */
const GOLDEN = 0x9e3779b1;
/** The filter starts at 2^16 slots and grows fourfold whenever more than 1/32 of its slots would be taken. */
const FIRST_BITS = 16;

/** The hash of the gram at `i` (its four UTF-16 units folded into 32 bits, then multiplied). */
function gramHash(text: string, i: number): number {
  const folded =
    text.charCodeAt(i) ^
    (text.charCodeAt(i + 1) << 8) ^
    (text.charCodeAt(i + 2) << 16) ^
    (text.charCodeAt(i + 3) << 24);
  return Math.imul(folded, GOLDEN);
}

/**
 * Finds every occurrence of a changing set of strings (the secret forms) in one pass over a text, with strings added
 * and removed in time proportional to their own length — no rebuild of the whole set.
 *
 * A sampled q-gram filter (the skip idea of Wu–Manber, with Rabin–Karp's hash-and-verify): for each string, the
 * hashes of the grams at offsets 0…STEP-1 of its first MIN_FORM_LENGTH characters are marked in a byte table, one bit
 * per offset. The scan hashes only every STEP-th gram of the text (about one character read per character, no work
 * per pattern); a marked slot names the offsets at which an occurrence could start, and each such start is verified
 * in a trie of the strings (blockTrie.ts). Holders are counted: a string added twice stays until removed twice.
 */
export class FormIndex {
  private bits = FIRST_BITS;
  /** Per slot, a bit for each gram offset some string has there. */
  private filter = new Uint8Array(1 << FIRST_BITS);
  /** How many held strings mark each (slot, offset) pair, keyed `slot * 8 + offset`. */
  private readonly marks = new Map<number, number>();
  /** The strings, to verify a position the filter lets through. */
  private readonly trie = new BlockTrie();
  /** Holders per string. */
  private readonly holders = new Map<string, number>();
  /** How many strings have each length (for {@link longest} after a removal). */
  private readonly lengths = new Map<number, number>();
  private longestLength = 0;

  /** Add one holder of `form` (a string shorter than MIN_FORM_LENGTH is ignored). */
  add(form: string): void {
    if (form.length < MIN_FORM_LENGTH) return;
    const held = this.holders.get(form);
    this.holders.set(form, (held ?? 0) + 1);
    if (held !== undefined) return;
    this.markAll(form, 1);
    this.trie.insert(form);
    this.lengths.set(form.length, (this.lengths.get(form.length) ?? 0) + 1);
    this.longestLength = Math.max(this.longestLength, form.length);
    if (this.marks.size > 1 << (this.bits - 5)) this.grow();
  }

  /** Drop one holder of `form`; the last one's removal makes the index forget it. */
  remove(form: string): void {
    const held = this.holders.get(form);
    if (held === undefined) return;
    if (held > 1) return void this.holders.set(form, held - 1);
    this.holders.delete(form);
    this.markAll(form, -1);
    this.trie.delete(form);
    const left = this.lengths.get(form.length)! - 1;
    if (left > 0) this.lengths.set(form.length, left);
    else {
      this.lengths.delete(form.length);
      // Lengths are few (a secret's forms are a handful of multiples of its length), so this loop is short.
      if (form.length === this.longestLength) this.longestLength = Math.max(0, ...this.lengths.keys());
    }
  }

  /** Whether `form` itself is held. */
  has(form: string): boolean {
    return this.holders.has(form);
  }

  /** Number of distinct strings held. */
  get size(): number {
    return this.holders.size;
  }

  /** Length of the longest string held (0 when empty). */
  get longest(): number {
    return this.longestLength;
  }

  /** Add `[start, end)` of the longest held string starting at each position of `text` where one occurs. */
  scan(text: string, into: Span[]): void {
    this.each(text, (start, end) => void into.push([start, end]));
  }

  /** Whether any held string occurs in `text`. */
  occursIn(text: string): boolean {
    let found = false;
    this.each(text, () => (found = true));
    return found;
  }

  /** Call `hit` for each position of `text` where a held string starts (the longest one), until it returns true. */
  private each(text: string, hit: (start: number, end: number) => boolean | void): void {
    const n = text.length;
    if (this.holders.size === 0 || n < MIN_FORM_LENGTH) return;
    const filter = this.filter;
    const shift = 32 - this.bits;
    for (let p = 0; p + GRAM <= n; p += STEP) {
      const mask = filter[gramHash(text, p) >>> shift]!;
      if (mask === 0) continue;
      for (let o = 0; o < STEP; o++) {
        if ((mask & (1 << o)) === 0) continue;
        const start = p - o;
        if (start < 0 || start + MIN_FORM_LENGTH > n) continue;
        const length = this.trie.longestAt(text, start);
        if (length > 0 && hit(start, start + length) === true) return;
      }
    }
  }

  /** Count the marks of `form`'s grams up or down, keeping a slot's offset bit set while any string marks it. */
  private markAll(form: string, by: 1 | -1): void {
    const shift = 32 - this.bits;
    for (let o = 0; o < STEP; o++) {
      const slot = gramHash(form, o) >>> shift;
      const key = slot * 8 + o;
      const count = (this.marks.get(key) ?? 0) + by;
      if (count > 0) {
        this.marks.set(key, count);
        this.filter[slot]! |= 1 << o;
      } else {
        this.marks.delete(key);
        this.filter[slot]! &= ~(1 << o);
      }
    }
  }

  /** Quadruple the filter and mark every string again, so that few slots are taken and few positions need checking. */
  private grow(): void {
    this.bits += 2;
    this.filter = new Uint8Array(1 << this.bits);
    this.marks.clear();
    for (const form of this.holders.keys()) this.markAll(form, 1);
  }
}
