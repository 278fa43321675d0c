import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { unifiedDiff } from '../../../host/changes/unifiedDiff.js';
import { applyUnifiedDiff } from '../../helpers/applyUnifiedDiff.js';

const diffOf = (a: string, b: string) => {
  const result = unifiedDiff(a, b);
  if (!result.ok) throw new Error(result.reason);
  return result;
};

describe('unifiedDiff', () => {
  it('writes hunks with three lines of context, as diff -u does', () => {
    const before = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'].map((l) => `${l}\n`).join('');
    const after = before.replace('e\n', 'E\n');
    expect(diffOf(before, after)).toEqual({
      ok: true,
      diff: '@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n',
      added: 1,
      removed: 1,
      truncated: false,
    });
  });

  it('names an empty side by the line before it, and marks a missing final newline', () => {
    expect(diffOf('', 'x\ny').diff).toBe('@@ -0,0 +1,2 @@\n+x\n+y\n\\ No newline at end of file\n');
    expect(diffOf('x\n', '').diff).toBe('@@ -1,1 +0,0 @@\n-x\n');
    expect(diffOf('x\n', 'x').diff).toBe('@@ -1,1 +1,1 @@\n-x\n+x\n\\ No newline at end of file\n');
    expect(diffOf('same\n', 'same\n')).toMatchObject({ diff: '', added: 0, removed: 0 });
  });

  it('keeps changes far apart in separate hunks and close ones in one', () => {
    const lines = Array.from({ length: 30 }, (_, i) => `${i}\n`);
    const far = [...lines];
    far[2] = 'x\n';
    far[25] = 'y\n';
    expect(diffOf(lines.join(''), far.join('')).diff.match(/^@@/gm)).toHaveLength(2);
    const near = [...lines];
    near[2] = 'x\n';
    near[8] = 'y\n';
    expect(diffOf(lines.join(''), near.join('')).diff.match(/^@@/gm)).toHaveLength(1);
  });

  it('refuses more lines or more edits than its bounds, and cuts a long diff at a line', () => {
    const many = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}${i}\n`).join('');
    expect(unifiedDiff(many(11, 'a'), 'x\n', { maxLines: 10 })).toEqual({
      ok: false,
      reason: 'more than 10 lines on a side',
    });
    expect(unifiedDiff(many(6, 'a'), many(6, 'b'), { maxEdits: 11 })).toEqual({
      ok: false,
      reason: 'more than 11 lines differ',
    });
    expect(unifiedDiff(many(6, 'a'), many(6, 'b'), { maxEdits: 12 }).ok).toBe(true);
    const cut = unifiedDiff('', many(100, 'line'), { maxChars: 100 });
    expect(cut).toMatchObject({ ok: true, truncated: true });
    if (cut.ok) {
      expect(cut.diff.length).toBeLessThanOrEqual(100);
      expect(cut.diff.endsWith('\n')).toBe(true);
    }
  });

  it('an adversarial pair (every line different, each line long) is refused quickly, not computed', () => {
    const long = (tag: string) => Array.from({ length: 20_000 }, (_, i) => `${'p'.repeat(200)}${tag}${i}\n`).join('');
    const started = performance.now();
    expect(unifiedDiff(long('a'), long('b'))).toEqual({ ok: false, reason: 'more than 1000 lines differ' });
    // Bounded by lines × edits (interned, one integer compare each): far below a second on any machine.
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it('property: applying the diff to the old text gives the new text, and counts match the +/- lines', () => {
    const line = fc.constantFrom('a', 'b', 'c', 'd', '', ' x', '\\ y', '@@ z');
    const text = fc
      .tuple(fc.array(line, { maxLength: 40 }), fc.boolean())
      .map(([lines, newline]) => lines.join('\n') + (newline && lines.length ? '\n' : ''));
    fc.assert(
      fc.property(text, text, (before, after) => {
        const result = diffOf(before, after);
        expect(applyUnifiedDiff(before, result.diff)).toBe(after);
        expect(result.diff.match(/^\+/gm)?.length ?? 0).toBe(result.added);
        expect(result.diff.match(/^-/gm)?.length ?? 0).toBe(result.removed);
      }),
      { numRuns: 500 },
    );
  });

  it('property: the edit is minimal for one inserted or removed block', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ maxLength: 5 }), { maxLength: 30 }),
        fc.array(fc.string({ maxLength: 5 }), { minLength: 1, maxLength: 10 }),
        fc.nat(),
        (base, block, pos) => {
          const lines = base.map((l) => `${l.replace(/\n/g, '')}\n`);
          const at = pos % (lines.length + 1);
          const inserted = block.map((l) => `${l.replace(/\n/g, '')}\n`);
          const after = [...lines.slice(0, at), ...inserted, ...lines.slice(at)].join('');
          const result = diffOf(lines.join(''), after);
          expect(result.added + result.removed).toBe(inserted.length);
          expect(applyUnifiedDiff(lines.join(''), result.diff)).toBe(after);
        },
      ),
    );
  });
});
