// JSON option values of the CLI (host/cli/hostFlags.ts): bounded in size and nesting, scanned before parsing.
import { describe, expect, it } from 'vitest';
import { hostConfigFromFlags, parseJsonObjectFlag, parseLeaseMs } from '../../../host/cli/hostFlags.js';
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

describe('the database URL (--database-url, PADDOCK_DATABASE_URL)', () => {
  const WITH_PASSWORD = 'postgresql://paddock:pa55-w0rd@db.internal:5432/paddock';
  it('comes from --database-url, else PADDOCK_DATABASE_URL, into the host configuration', () => {
    const before = process.env.PADDOCK_DATABASE_URL;
    try {
      process.env.PADDOCK_DATABASE_URL = WITH_PASSWORD;
      expect(hostConfigFromFlags({}).databaseUrl).toBe(WITH_PASSWORD);
      const flag = 'postgresql://other@db.internal/paddock';
      expect(hostConfigFromFlags({ 'database-url': flag }).databaseUrl).toBe(flag);
      delete process.env.PADDOCK_DATABASE_URL;
      expect(hostConfigFromFlags({})).not.toHaveProperty('databaseUrl');
    } finally {
      if (before === undefined) delete process.env.PADDOCK_DATABASE_URL;
      else process.env.PADDOCK_DATABASE_URL = before;
    }
  });
});

describe("a host's lease length (PADDOCK_LEASE_MS)", () => {
  it('takes 1000 to 600000 ms in decimal digits; anything else is a usage error naming the variable', () => {
    expect(parseLeaseMs(undefined)).toBeUndefined();
    expect(parseLeaseMs('1000')).toBe(1_000);
    expect(parseLeaseMs('600000')).toBe(600_000);
    for (const bad of ['999', '600001', '15s', '1e4', ' 15000', '-1500', '', '0x3a98'])
      expect(() => parseLeaseMs(bad), bad).toThrow(
        /^PADDOCK_LEASE_MS must be a whole number of milliseconds from 1000 to 600000, got /,
      );
  });
});
