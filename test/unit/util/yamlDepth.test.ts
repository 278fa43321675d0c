// The YAML nesting estimate taken before parsing (host/util/yamlDepth.ts) and the size of a parsed value with its
// aliases expanded (host/util/valueSize.ts): the guards in front of the `yaml` parser and the configuration store.
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { valueDepth } from '../../../host/util/valueDepth.js';
import { jsonSizeAtMost } from '../../../host/util/valueSize.js';
import { yamlNestingDepth } from '../../../host/util/yamlDepth.js';

/** A deterministic pseudo-random source (mulberry32), so a failure repeats. */
function random(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A random nested value up to `depth` levels: maps, sequences, and scalars that look like YAML syntax. */
function value(next: () => number, depth: number): unknown {
  const scalars = ['x', '- a', '[b', 'c]', '{d', "it's", 'say "hi"', '# not a comment', 'a: b', '|', '>-', 42, true];
  if (depth === 0 || next() < 0.2) return scalars[Math.floor(next() * scalars.length)];
  const n = 1 + Math.floor(next() * 3);
  if (next() < 0.5) return Array.from({ length: n }, () => value(next, depth - 1));
  return Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, value(next, depth - 1)]));
}

describe('yamlNestingDepth', () => {
  it('never falls short of the real depth, and overshoots by at most two, in block and flow style', () => {
    const next = random(7);
    for (let i = 0; i < 400; i += 1) {
      const v = value(next, 1 + Math.floor(next() * 12));
      const real = valueDepth(v, 1000);
      for (const text of [stringify(v), stringify(v, { collectionStyle: 'flow' }), JSON.stringify(v)]) {
        expect(parse(text)).toEqual(v);
        const estimate = yamlNestingDepth(text, 1000);
        expect(estimate, text).toBeGreaterThanOrEqual(real);
        expect(estimate, text).toBeLessThanOrEqual(real + 2);
      }
    }
  }, 60_000);

  it('measures the shapes that overflow the parser, in one pass, stopping past the limit', () => {
    const shapes = {
      'compact sequences on one line': `${'- '.repeat(500_000)}x`,
      'flow brackets': `${'['.repeat(400_000)}${']'.repeat(400_000)}`,
      'flow maps': `${'{a: '.repeat(200_000)}1${'}'.repeat(200_000)}`,
      indentation: Array.from({ length: 1400 }, (_, i) => `${' '.repeat(i)}a:`).join('\n'),
      'complex keys': `${'? '.repeat(300_000)}x`,
    };
    for (const [name, text] of Object.entries(shapes)) {
      const started = performance.now();
      expect(yamlNestingDepth(text, 64), name).toBeGreaterThan(64);
      expect(performance.now() - started, name).toBeLessThan(1_000);
    }
  });

  it('is not fooled by quotes, comments and block scalars, nor misled by them into refusing', () => {
    const quoted = `a: "${'['.repeat(500)}"\nb: '${'{'.repeat(500)}'\nc: x # ${'['.repeat(500)}\n`;
    expect(yamlNestingDepth(quoted, 64)).toBe(1);
    const lines = Array.from({ length: 200 }, (_, i) => `  ${' '.repeat(i)}line ${i} [{`);
    const block = `prompt: |\n${lines.join('\n')}\nb: 1\n`;
    expect((parse(block) as { b: number }).b).toBe(1);
    expect(yamlNestingDepth(block, 64)).toBe(1);
    // A quote does not hide what follows it on the next lines once closed.
    expect(yamlNestingDepth(`a: "x\n  y"\nb: ${'['.repeat(80)}${']'.repeat(80)}`, 64)).toBeGreaterThan(64);
  });
});

describe('jsonSizeAtMost', () => {
  it('counts shared parts once per reference, stopping just past the limit', () => {
    const big = 'A'.repeat(900_000);
    const text = `args:\n  - &s "${big}"\n${'  - *s\n'.repeat(90)}`;
    const parsed = parse(text) as { args: string[] };
    expect(parsed.args).toHaveLength(91);
    const limit = 1024 * 1024;
    expect(jsonSizeAtMost(parsed, limit)).toBeGreaterThan(limit);
    expect(jsonSizeAtMost(parsed, limit)).toBeLessThan(limit + 1_000_000); // stopped, not the 82 MB
    const small = { bindings: [{ id: 'a', runner: 'echo', route: { platform: 'p' } }] };
    expect(jsonSizeAtMost(small, limit)).toBe(JSON.stringify(small).length);
  });
});

describe('yamlNestingDepth against hiding', () => {
  // Each hides deep nesting behind something the estimate might take for a quote, a flow bracket or a block
  // scalar where YAML sees none; YAML nests the lines after it, so the estimate must count them.
  const deep = `${'- '.repeat(100)}x`;
  const cases: Record<string, string> = {
    'an apostrophe in a plain scalar': `a: it's\nb:\n  ${deep}`,
    'a quote inside a plain scalar': `a: say "x\nb:\n  ${deep}`,
    'a bracket inside a plain scalar': `a: x[\nb:\n  ${deep}`,
    'a pipe inside a plain scalar': `a: x |\nb:\n  ${deep}`,
    'a tag before a flow collection': `a: !!seq ${'['.repeat(100)}${']'.repeat(100)}`,
  };
  for (const [name, text] of Object.entries(cases))
    it(`counts what follows ${name}`, () => {
      expect(valueDepth(parse(text), 1000), 'YAML nests it').toBeGreaterThan(64);
      expect(yamlNestingDepth(text, 64)).toBeGreaterThan(64);
    });
});
