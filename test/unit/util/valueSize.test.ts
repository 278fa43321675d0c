// The size of a parsed value written as JSON with its YAML aliases expanded (host/util/valueSize.ts): the bound in
// front of the configuration store.
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { jsonSizeAtMost } from '../../../host/util/valueSize.js';

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
