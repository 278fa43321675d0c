// Package versions: what is one (a folder name part) and their order (host/packages/versionOrder.ts).
import { describe, expect, it } from 'vitest';
import { compareVersions, isPackageVersion } from '../../../host/packages/versionOrder.js';

describe('isPackageVersion', () => {
  it.each(['1.0.0', '0.0.1', '10.20.30', '1.0.0-rc.1', '1.0.0-alpha-1.x', '1.0.0+build.5', '1.0.0-rc.1+sha.abc'])(
    'takes %s',
    (v) => expect(isPackageVersion(v)).toBe(true),
  );
  it.each([
    '1.0',
    '01.0.0',
    '1.0.0-',
    '../1.0.0',
    '1.0.0/x',
    '1.0.0\n',
    'v1.0.0',
    '1.0.0-a..b',
    `1.0.0-${'x'.repeat(60)}`,
    '',
  ])('refuses %j', (v) => expect(isPackageVersion(v)).toBe(false));
});

describe('compareVersions', () => {
  it('orders as semver does: numbers by value, a prerelease before its release, build metadata ignored', () => {
    const sorted = [
      '1.10.0',
      '1.2.0',
      '1.0.0',
      '1.0.0-rc.10',
      '1.0.0-rc.2',
      '1.0.0-alpha',
      '1.0.0-rc',
      '2.0.0+b',
      '1.0.0-1',
    ];
    expect([...sorted].sort(compareVersions)).toEqual([
      '1.0.0-1',
      '1.0.0-alpha',
      '1.0.0-rc',
      '1.0.0-rc.2',
      '1.0.0-rc.10',
      '1.0.0',
      '1.2.0',
      '1.10.0',
      '2.0.0+b',
    ]);
    expect(compareVersions('1.0.0+a', '1.0.0+b')).toBe(0);
  });
  it('throws on what is not a version', () => {
    expect(() => compareVersions('1.0', '1.0.0')).toThrow(/not a version/);
  });
});
