import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FormIndex, type Span } from '../../../host/secrets/formIndex.js';

/** Every position where some held string starts, with the longest one there: the index's answer, done naively. */
function naive(held: Set<string>, text: string): Span[] {
  const out: Span[] = [];
  for (let s = 0; s < text.length; s++) {
    let best = 0;
    for (const f of held) if (f.length > best && text.startsWith(f, s)) best = f.length;
    if (best > 0) out.push([s, s + best]);
  }
  return out;
}

const sorted = (spans: Span[]) => [...spans].sort((a, b) => a[0] - b[0]);

describe('the form index', () => {
  it('finds exactly what a naive search finds, through random adds and removes (shared prefixes, bursts)', () => {
    // A small alphabet and a shared prefix make overlaps, prefixes of one another and crowded trie nodes likely.
    const word = fc.string({ unit: fc.constantFrom('a', 'b', 'é', '_'), minLength: 0, maxLength: 30 });
    const form = fc.tuple(fc.constantFrom('', 'pdk_run_', 'pdk_run_ab'), word).map(([p, w]) => `${p}${w}`);
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.boolean(), form), { maxLength: 60 }),
        fc.array(form, { maxLength: 8 }),
        (ops, pieces) => {
          const index = new FormIndex();
          const held = new Map<string, number>();
          for (const [add, f] of ops) {
            if (f.length < 8) continue;
            if (add || !held.has(f)) {
              index.add(f);
              held.set(f, (held.get(f) ?? 0) + 1);
            } else {
              index.remove(f);
              const left = held.get(f)! - 1;
              if (left > 0) held.set(f, left);
              else held.delete(f);
            }
          }
          const forms = new Set(held.keys());
          const text = pieces.join('') + [...forms].slice(0, 3).join('x');
          const found: Span[] = [];
          index.scan(text, found);
          expect(sorted(found)).toEqual(naive(forms, text));
          expect(index.occursIn(text)).toBe(naive(forms, text).length > 0);
          expect(index.size).toBe(forms.size);
          expect(index.longest).toBe(Math.max(0, ...[...forms].map((f) => f.length)));
        },
      ),
      { numRuns: 400 },
    );
  });

  it('keeps finding every string as the filter grows past thousands of strings, and forgets each removed one', () => {
    const index = new FormIndex();
    const forms = Array.from({ length: 20_000 }, (_, i) => `secret-${i.toString(36)}-${(i * 7919).toString(16)}`);
    for (const f of forms) index.add(f);
    const text = forms.filter((_, i) => i % 997 === 0).join(' ');
    const found: Span[] = [];
    index.scan(text, found);
    expect(found.map(([s, e]) => text.slice(s, e))).toEqual(forms.filter((_, i) => i % 997 === 0));
    for (const f of forms) index.remove(f);
    expect(index.occursIn(text)).toBe(false);
    expect(index.size).toBe(0);
  });
});
