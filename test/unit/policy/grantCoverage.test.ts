import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Action, CapabilityGrant, Effect, Scope } from '../../../host/policy/actions.js';
import { classifyCommand } from '../../../host/policy/classify.js';
import { covers, coversExactly, isLive, pathCovers } from '../../../host/policy/grantCoverage.js';

const now = new Date('2026-12-01T12:00:00Z');
const ctx = { now, tenant: 't1', bindingId: 'b1', sessionId: 's1', runId: 'r1' };

function grant(capability: Effect, scope: Scope, extra: Partial<CapabilityGrant> = {}): CapabilityGrant {
  return {
    id: 'g1',
    capability,
    scope,
    lifetime: 'binding',
    tenant: 't1',
    bindingId: 'b1',
    grantor: 'cli:alice',
    createdAt: '2026-12-01T00:00:00Z',
    ...extra,
  };
}
const path = (effect: Effect, value: string): Action => ({ effect, target: { kind: 'path', value }, via: 'test' });
const domain = (value: string): Action => ({ effect: 'network', target: { kind: 'domain', value }, via: 'test' });
const tool = (value: string): Action => ({ effect: 'network', target: { kind: 'tool', value }, via: 'test' });

describe('isLive', () => {
  it('a revoked, expired or used-once grant is not live', () => {
    expect(isLive(grant('fs.write', { kind: 'path', value: 'a' }), ctx)).toBe(true);
    expect(isLive(grant('fs.write', { kind: 'path', value: 'a' }, { revokedAt: '2027-01-01T00:00:00Z' }), ctx)).toBe(
      false,
    );
    expect(isLive(grant('fs.write', { kind: 'path', value: 'a' }, { expiresAt: '2026-12-01T12:00:00Z' }), ctx)).toBe(
      false,
    );
    expect(isLive(grant('fs.write', { kind: 'path', value: 'a' }, { expiresAt: 'soon' }), ctx)).toBe(false);
    expect(isLive(grant('fs.write', { kind: 'path', value: 'a' }, { expiresAt: '2026-12-01T12:00:01Z' }), ctx)).toBe(
      true,
    );
    const once = { lifetime: 'once' as const, sessionId: 's1', runId: 'r1' };
    expect(isLive(grant('fs.write', { kind: 'path', value: 'a' }, once), ctx)).toBe(true);
    expect(isLive(grant('fs.write', { kind: 'path', value: 'a' }, { ...once, usedAt: now.toISOString() }), ctx)).toBe(
      false,
    );
  });

  it('another tenant, binding, session or run is not covered', () => {
    const g = (extra: Partial<CapabilityGrant>) => isLive(grant('exec', { kind: 'command', value: 'ls' }, extra), ctx);
    expect(g({ tenant: 't2' })).toBe(false);
    expect(g({ bindingId: 'b2' })).toBe(false);
    expect(g({ lifetime: 'session', sessionId: 's2' })).toBe(false);
    expect(g({ lifetime: 'session', sessionId: 's1' })).toBe(true);
    expect(g({ lifetime: 'session' })).toBe(false);
    expect(g({ lifetime: 'run', sessionId: 's1', runId: 'r2' })).toBe(false);
    expect(g({ lifetime: 'run', runId: 'r1' })).toBe(true);
    expect(g({ lifetime: 'run' })).toBe(false);
    expect(g({ lifetime: 'binding', runId: 'r2' })).toBe(false);
    expect(
      isLive(grant('exec', { kind: 'command', value: 'ls' }, { lifetime: 'run', runId: 'r1' }), {
        ...ctx,
        runId: undefined,
      }),
    ).toBe(false);
  });
});

describe('covers: paths', () => {
  const g = (value: string) => grant('fs.write', { kind: 'path', value });
  it('a folder grant covers beneath it at a segment boundary only', () => {
    expect(covers(g('src/'), path('fs.write', 'src/a.ts'), ctx)).toBe(true);
    expect(covers(g('src/'), path('fs.write', 'src/deep/a.ts'), ctx)).toBe(true);
    expect(covers(g('src/'), path('fs.write', 'srcx/a.ts'), ctx)).toBe(false);
    expect(covers(g('src/'), path('fs.write', 'src'), ctx)).toBe(false);
    expect(covers(g('src'), path('fs.write', 'src/a.ts'), ctx)).toBe(false);
    expect(covers(g('src/a.ts'), path('fs.write', 'src/a.ts'), ctx)).toBe(true);
    expect(covers(g('src/a.ts'), path('fs.write', 'src/a.tsx'), ctx)).toBe(false);
  });

  it('never covers a path with .. segments, nor through a grant with them', () => {
    expect(covers(g('src/'), path('fs.write', 'src/../.env'), ctx)).toBe(false);
    expect(covers(g('src/'), path('fs.write', 'src/..'), ctx)).toBe(false);
    expect(covers(g('src/../'), path('fs.write', 'src/../x'), ctx)).toBe(false);
    expect(covers(g('src/'), path('fs.write', 'src/..a/b'), ctx)).toBe(true);
  });

  it('the capability must be the action effect: a write grant does not cover a secret path', () => {
    expect(covers(g('config/'), path('credential', 'config/.env'), ctx)).toBe(false);
    expect(covers(g('src/'), path('fs.read', 'src/a.ts'), ctx)).toBe(false);
    expect(
      covers(grant('credential', { kind: 'path', value: 'config/.env' }), path('credential', 'config/.env'), ctx),
    ).toBe(true);
  });

  it('a grant of another kind never covers', () => {
    expect(covers(grant('fs.write', { kind: 'command', value: 'src/a.ts' }), path('fs.write', 'src/a.ts'), ctx)).toBe(
      false,
    );
  });

  it('property: a path grant for P covers Q only if Q === P or P ends with / and Q starts with P', () => {
    const seg = fc.constantFrom('src', 'srcx', 'a', '..', '.', 'b.ts', '', '.env');
    const pathArb = fc
      .array(seg, { minLength: 1, maxLength: 4 })
      .chain((segs) => fc.constantFrom(segs.join('/'), `${segs.join('/')}/`, `/${segs.join('/')}`));
    fc.assert(
      fc.property(pathArb, pathArb, (p, q) => {
        if (covers(g(p), path('fs.write', q), ctx)) expect(q === p || (p.endsWith('/') && q.startsWith(p))).toBe(true);
        if (pathCovers(p, q)) expect(q.split('/')).not.toContain('..');
      }),
      { numRuns: 3000 },
    );
  });
});

describe('covers: domains and tools', () => {
  it('a domain grant covers that host only; a wildcard only if the grant names one', () => {
    const exact = grant('network', { kind: 'domain', value: 'api.example.com' });
    const wild = grant('network', { kind: 'domain', value: '*.example.com' });
    expect(covers(exact, domain('api.example.com'), ctx)).toBe(true);
    expect(covers(exact, domain('API.example.com.'), ctx)).toBe(true);
    expect(covers(exact, domain('x.api.example.com'), ctx)).toBe(false);
    expect(covers(exact, domain('example.com'), ctx)).toBe(false);
    expect(covers(wild, domain('x.example.com'), ctx)).toBe(true);
    expect(covers(wild, domain('example.com'), ctx)).toBe(false);
    expect(covers(wild, domain('evil-example.com'), ctx)).toBe(false);
    expect(
      covers(grant('network', { kind: 'domain', value: 'bucher.example' }), domain('xn--bcher-kva.example'), ctx),
    ).toBe(false);
  });

  it('a tool grant covers that tool, or all of a server only when it says server/*', () => {
    const one = grant('network', { kind: 'tool', value: 'gh/create_issue' });
    const all = grant('network', { kind: 'tool', value: 'gh/*' });
    expect(covers(one, tool('gh/create_issue'), ctx)).toBe(true);
    expect(covers(one, tool('gh/create_issue2'), ctx)).toBe(false);
    expect(covers(one, tool('gh/delete_repo'), ctx)).toBe(false);
    expect(covers(all, tool('gh/delete_repo'), ctx)).toBe(true);
    expect(covers(all, tool('ghx/delete_repo'), ctx)).toBe(false);
    expect(covers(all, tool('gh/'), ctx)).toBe(false);
  });
});

describe('covers: commands', () => {
  const g = (value: string, capability: Effect = 'exec') => grant(capability, { kind: 'command', value });
  const cmd = (text: string) => classifyCommand(text, 'claude-code:Bash');

  it('the grant is exactly the argv of every part; a value ending " *" is an argv prefix', () => {
    expect(covers(g('npm test'), cmd('npm test'), ctx)).toBe(true);
    expect(covers(g('npm test'), cmd("npm 'test'"), ctx)).toBe(true);
    expect(covers(g('npm test'), cmd('npm test && npm test'), ctx)).toBe(true);
    // Extra arguments can change what runs (the outside attack): not covered by an exact grant.
    expect(covers(g('npm test'), cmd('npm test -- --watch'), ctx)).toBe(false);
    expect(covers(g('npm test'), cmd('npm test --script-shell=./evil.sh'), ctx)).toBe(false);
    expect(covers(g('git push origin main'), cmd('git push origin main --force'), ctx)).toBe(false);
    expect(covers(g('npm test'), cmd('npm testx'), ctx)).toBe(false);
    expect(covers(g('npm test'), cmd('npm'), ctx)).toBe(false);
    expect(covers(g('npm test *'), cmd('npm test -- --watch'), ctx)).toBe(true);
    expect(covers(g('npm test *'), cmd('npm testx'), ctx)).toBe(false);
  });

  it('a command with another part is not covered', () => {
    expect(covers(g('npm test'), cmd('npm test && curl x'), ctx)).toBe(false);
    expect(covers(g('npm test'), cmd('npm test; rm -rf /'), ctx)).toBe(false);
    expect(covers(g('npm test'), cmd('npm test $(curl x)'), ctx)).toBe(false);
    expect(covers(g('npm test'), cmd('npm test > /etc/cron.d/x'), ctx)).toBe(false);
    expect(covers(g('npm test'), cmd('npm test\ncurl x'), ctx)).toBe(false);
  });

  it('an opaque command is never covered', () => {
    expect(covers(g('npm test'), cmd('npm test; eval "$X"'), ctx)).toBe(false);
    expect(covers(g('eval'), cmd('eval x'), ctx)).toBe(false);
    expect(covers(g('npm test'), cmd('npm test <<EOF\nx\nEOF'), ctx)).toBe(false);
  });

  it('a grant of a weaker capability or an unsplittable value covers nothing', () => {
    expect(covers(g('git push', 'exec'), cmd('git push'), ctx)).toBe(false);
    expect(covers(g('git push', 'publish'), cmd('git push'), ctx)).toBe(true);
    expect(covers(g('npm test && ls'), cmd('npm test && ls'), ctx)).toBe(false);
    expect(covers(g(''), cmd('ls'), ctx)).toBe(false);
  });
});

describe('coversExactly', () => {
  it('needs the exact target: no folder, wildcard or prefix', () => {
    expect(
      coversExactly(grant('network', { kind: 'domain', value: 'a.example.com' }), domain('a.example.com'), ctx),
    ).toBe(true);
    expect(
      coversExactly(grant('network', { kind: 'domain', value: '*.example.com' }), domain('a.example.com'), ctx),
    ).toBe(false);
    expect(coversExactly(grant('network', { kind: 'tool', value: 'gh/*' }), tool('gh/x'), ctx)).toBe(false);
    expect(coversExactly(grant('fs.write', { kind: 'path', value: 'src/' }), path('fs.write', 'src/a'), ctx)).toBe(
      false,
    );
    expect(
      coversExactly(grant('network', { kind: 'domain', value: 'a.test' }, { revokedAt: 'x' }), domain('a.test'), ctx),
    ).toBe(false);
  });
});
