// JSON option values of the CLI (host/cli/hostFlags.ts): bounded in size and nesting, scanned before parsing.
import { describe, expect, it } from 'vitest';
import { parseJsonObjectFlag } from '../../../host/cli/hostFlags.js';
import { UsageError } from '../../../host/cli/spec.js';

describe('JSON option values (--config)', () => {
  it('over 1 MiB is a usage error naming the flag and the size; 64 levels pass, 65 do not', () => {
    const big = `{"a":"${'x'.repeat(1024 * 1024)}"}`;
    expect(() => parseJsonObjectFlag('--config', big)).toThrow(UsageError);
    expect(() => parseJsonObjectFlag('--config', big)).toThrow(
      `--config is ${big.length} bytes of JSON; the limit is 1048576`,
    );
    expect(parseJsonObjectFlag('--config', `{"a":${'['.repeat(63)}${']'.repeat(63)}}`)).toHaveProperty('a');
    expect(() => parseJsonObjectFlag('--config', `{"a":${'['.repeat(64)}${']'.repeat(64)}}`)).toThrow(
      /nests deeper than 64/,
    );
    // Brackets inside strings are not nesting.
    expect(parseJsonObjectFlag('--config', `{"a":"${'['.repeat(500)}"}`)).toHaveProperty('a');
  });
});
