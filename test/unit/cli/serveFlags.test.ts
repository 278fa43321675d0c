import { describe, expect, it } from 'vitest';
import { parseListen, parseRateFlag } from '../../../host/cli/commands/serve.js';
import { UsageError } from '../../../host/cli/spec.js';

describe('paddock serve flags', () => {
  it('--listen takes host:port, [IPv6]:port and names', () => {
    expect(parseListen('127.0.0.1:8420')).toEqual({ host: '127.0.0.1', port: 8420 });
    expect(parseListen('[::1]:0')).toEqual({ host: '::1', port: 0 });
    expect(parseListen('localhost:65535')).toEqual({ host: 'localhost', port: 65535 });
  });

  it('a bad --listen is a usage error naming the flag and the value', () => {
    for (const bad of ['8420', '127.0.0.1', '127.0.0.1:65536', ':80', '[nothex]:1', 'a b:1', '127.0.0.1:-1', 'h:1:2']) {
      expect(() => parseListen(bad), bad).toThrow(UsageError);
      expect(() => parseListen(bad)).toThrow(/--listen .*got/);
    }
  });

  it('--rate and --burst are whole numbers from 1', () => {
    expect(parseRateFlag('--rate', undefined, 20)).toBe(20);
    expect(parseRateFlag('--rate', '5', 20)).toBe(5);
    for (const bad of ['0', '-1', '1.5', '1e3', ' 3', 'x'])
      expect(() => parseRateFlag('--burst', bad, 40)).toThrow(/--burst/);
  });
});
