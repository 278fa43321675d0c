import { describe, expect, it } from 'vitest';
import type { Action } from '../../../host/policy/actions.js';
import { classifyCommand, classifyPath } from '../../../host/policy/classify.js';
import { levelOf, riskOf, type RiskContext } from '../../../host/policy/risk.js';

const safe: RiskContext = { sandbox: 'strong', insideWorkspace: true, tainted: false };
const domain: Action = { effect: 'network', target: { kind: 'domain', value: 'x.test' }, via: 'egress' };

describe('riskOf', () => {
  it('a read in the workspace under bwrap is low; a secret path is not', () => {
    expect(riskOf(classifyPath('src/a.ts', 'fs.read', 'fs/read'), safe)).toMatchObject({ level: 'low' });
    const secret = riskOf(classifyPath('.env', 'fs.read', 'fs/read'), safe);
    expect(secret.level).not.toBe('low');
    expect(secret.reasons).toContain('secret path');
  });

  it('destructive and publish commands are high and say they cannot be undone', () => {
    for (const text of ['rm -rf build', 'git push --force']) {
      const risk = riskOf(classifyCommand(text, 'test'), safe);
      expect(risk.level).toBe('high');
      expect(risk.reasons).toContain('cannot be undone');
    }
  });

  it('rises outside the workspace and with a weaker sandbox, in that order', () => {
    const action = classifyPath('/etc/hosts', 'fs.write', 'fs/write');
    const inside = riskOf(action, safe).score;
    const outside = riskOf(action, { ...safe, insideWorkspace: false });
    const weakOnly = riskOf(action, { ...safe, insideWorkspace: false, sandbox: 'weak' });
    const none = riskOf(action, { ...safe, insideWorkspace: false, sandbox: 'none' });
    expect(outside.score).toBeGreaterThan(inside);
    expect(outside.reasons).toContain('outside the workspace');
    expect(weakOnly.score).toBeGreaterThan(outside.score);
    expect(none.score).toBeGreaterThan(weakOnly.score);
    expect(none.reasons).toContain('no sandbox');
  });

  it('taint raises what sends data out, not what stays', () => {
    expect(riskOf(domain, { ...safe, tainted: true }).score).toBeGreaterThan(riskOf(domain, safe).score);
    expect(riskOf(domain, { ...safe, tainted: true }).reasons.join(' ')).toContain('tainted');
    const read = classifyPath('a', 'fs.read', 'fs/read');
    expect(riskOf(read, { ...safe, tainted: true }).score).toBe(riskOf(read, safe).score);
  });

  it('an opaque command is high whatever it looks like', () => {
    const risk = riskOf(classifyCommand('eval ls', 'test'), safe);
    expect(risk.level).toBe('high');
    expect(risk.reasons).toContain('command could not be split into its parts');
  });

  it('a command carries the reasons of its strongest part', () => {
    const risk = riskOf(classifyCommand('ls && curl x', 'test'), safe);
    expect(risk.reasons).toContain('reaches the network');
    expect(risk.score).toBeGreaterThan(riskOf(classifyCommand('ls', 'test'), safe).score);
  });

  it('stays within 0..100 at the worst', () => {
    const worst = riskOf(classifyCommand('git push; eval x', 'test'), {
      sandbox: 'none',
      insideWorkspace: false,
      tainted: true,
    });
    expect(worst.score).toBeLessThanOrEqual(100);
    expect(worst.level).toBe('high');
  });

  it('levels: low below 30, medium below 70, high from 70', () => {
    expect([0, 29, 30, 69, 70, 100].map(levelOf)).toEqual(['low', 'low', 'medium', 'medium', 'high', 'high']);
  });
});
