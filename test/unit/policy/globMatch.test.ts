import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  domainMatch,
  domainSpecificity,
  globMatch,
  segmentMatch,
  specificity,
} from '../../../host/policy/globMatch.js';

describe('globMatch', () => {
  it('* and ? stay within a segment', () => {
    expect(globMatch('src/*.ts', 'src/a.ts')).toBe(true);
    expect(globMatch('src/*.ts', 'src/app/a.ts')).toBe(false);
    expect(globMatch('src/?.ts', 'src/a.ts')).toBe(true);
    expect(globMatch('src/?.ts', 'src/ab.ts')).toBe(false);
    expect(globMatch('src/?.ts', 'src//.ts')).toBe(false);
  });

  it('** crosses any number of segments, zero included', () => {
    expect(globMatch('**/.env', '.env')).toBe(true);
    expect(globMatch('**/.env', 'a/b/c/.env')).toBe(true);
    expect(globMatch('**/.env', 'a/b/c/.env.local')).toBe(false);
    expect(globMatch('src/**', 'src/a/b.ts')).toBe(true);
    expect(globMatch('src/**', 'srcx/a.ts')).toBe(false);
    expect(globMatch('src/**/test/*.ts', 'src/test/a.ts')).toBe(true);
    expect(globMatch('src/**/test/*.ts', 'src/a/b/test/a.ts')).toBe(true);
    expect(globMatch('**', 'anything/at/all')).toBe(true);
  });

  it('a relative glob never matches an absolute path, nor the reverse', () => {
    expect(globMatch('**', '/etc/passwd')).toBe(false);
    expect(globMatch('**/.env', '/home/u/.env')).toBe(false);
    expect(globMatch('/etc/**', 'etc/passwd')).toBe(false);
    expect(globMatch('/etc/**', '/etc/passwd')).toBe(true);
  });

  it('treats braces, brackets and regex characters literally', () => {
    expect(globMatch('src/{a,b}.ts', 'src/a.ts')).toBe(false);
    expect(globMatch('src/{a,b}.ts', 'src/{a,b}.ts')).toBe(true);
    expect(globMatch('[ab].ts', 'a.ts')).toBe(false);
    expect(globMatch('a.ts', 'abts')).toBe(false);
    expect(globMatch('(a+)+$', '(a+)+$')).toBe(true);
  });

  it('is case-sensitive, as Linux paths are', () => {
    expect(globMatch('**/.env', 'a/.ENV')).toBe(false);
  });

  it('stays fast on adversarial patterns', () => {
    const start = Date.now();
    const glob = `${'*a'.repeat(200)}b`;
    expect(segmentMatch(glob, 'a'.repeat(5000))).toBe(false);
    expect(globMatch(Array(200).fill('**').join('/') + '/x', Array(2000).fill('a').join('/'))).toBe(false);
    expect(Date.now() - start).toBeLessThan(2000);
  });

  it('agrees with a reference regex on random segments', () => {
    const toRegex = (p: string) =>
      new RegExp(`^${[...p].map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c === '.' ? '\\.' : c)).join('')}$`, 'su');
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom('a', 'b', '*', '?', '.'), { maxLength: 8 }).map((a) => a.join('')),
        fc.array(fc.constantFrom('a', 'b', '.'), { maxLength: 10 }).map((a) => a.join('')),
        (pattern, text) => {
          expect(segmentMatch(pattern, text)).toBe(toRegex(pattern).test(text));
        },
      ),
      { numRuns: 1000 },
    );
  });
});

describe('specificity', () => {
  it('counts literal segments', () => {
    expect(specificity('**')).toBe(0);
    expect(specificity('src/**')).toBe(1);
    expect(specificity('src/app/*.ts')).toBe(2);
    expect(specificity('src/app/main.ts')).toBe(3);
    expect(specificity('src/**')).toBeLessThan(specificity('src/app/*.ts'));
  });
});

describe('domainMatch', () => {
  it('a wildcard matches subdomains at any depth, never the apex nor a look-alike', () => {
    expect(domainMatch('*.example.com', 'api.example.com')).toBe(true);
    expect(domainMatch('*.example.com', 'a.b.example.com')).toBe(true);
    expect(domainMatch('*.example.com', 'example.com')).toBe(false);
    expect(domainMatch('*.example.com', 'evil-example.com')).toBe(false);
    expect(domainMatch('*.example.com', 'example.com.evil.net')).toBe(false);
    expect(domainMatch('*.example.com', '.example.com')).toBe(false);
  });

  it('otherwise matches exactly, case-insensitive, ignoring the root dot', () => {
    expect(domainMatch('example.com', 'EXAMPLE.com')).toBe(true);
    expect(domainMatch('example.com', 'example.com.')).toBe(true);
    expect(domainMatch('example.com', 'api.example.com')).toBe(false);
    expect(domainMatch('example.com', 'evil-example.com')).toBe(false);
  });

  it('ports must be the same: a pattern without one names the web ports only', () => {
    expect(domainMatch('example.com', 'example.com:443')).toBe(true);
    expect(domainMatch('example.com', 'example.com:80')).toBe(true);
    expect(domainMatch('example.com', 'example.com:22')).toBe(false);
    expect(domainMatch('example.com:8443', 'example.com')).toBe(false);
    expect(domainMatch('example.com:8443', 'EXAMPLE.com.:8443')).toBe(true);
    expect(domainMatch('*.example.com:8443', 'api.example.com:8443')).toBe(true);
    expect(domainMatch('*.example.com:8443', 'api.example.com:9443')).toBe(false);
    expect(domainMatch('*.example.com', 'api.example.com:8443')).toBe(false);
    expect(domainMatch('[::1]:8080', '[::1]:8080')).toBe(true);
    expect(domainMatch('::1', '[::1]')).toBe(true);
    expect(domainMatch('::1', '[::1]:8080')).toBe(false);
  });

  it('compares punycode as written: an xn-- host is not its ASCII look-alike', () => {
    expect(domainMatch('*.xn--bcher-kva.example', 'shop.xn--bcher-kva.example')).toBe(true);
    expect(domainMatch('bucher.example', 'xn--bcher-kva.example')).toBe(false);
    expect(domainMatch('*', 'example.com')).toBe(false);
    expect(domainMatch('*.', 'example.com')).toBe(false);
  });

  it('an exact host is more specific than any wildcard, a longer wildcard than a shorter one', () => {
    expect(domainSpecificity('api.example.com')).toBeGreaterThan(domainSpecificity('*.api.example.com'));
    expect(domainSpecificity('*.api.example.com')).toBeGreaterThan(domainSpecificity('*.example.com'));
  });
});
