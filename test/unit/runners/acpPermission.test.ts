// ACP permission requests as host actions (runners/acp/permission.ts): the action of each tool call kind, paths sent
// workspace-relative, the scope asked for, the option chosen (never "allow always"), malformed requests never
// throwing.
import type { RequestPermissionRequest } from '@agentclientprotocol/sdk';
import { describe, expect, it } from 'vitest';
import {
  acpOutcome,
  acpPermissionAction,
  acpRequestedScope,
  workspaceRelative,
} from '../../../runners/acp/permission.js';

const ROOT = '/tmp/paddock-x/workspaces/run_1';
const OPTIONS = [
  { optionId: 'always', name: 'Always', kind: 'allow_always' },
  { optionId: 'once', name: 'Once', kind: 'allow_once' },
  { optionId: 'no', name: 'No', kind: 'reject_once' },
  { optionId: 'never', name: 'Never', kind: 'reject_always' },
] as const;
const request = (toolCall: Record<string, unknown>, options: readonly object[] = OPTIONS) =>
  ({ sessionId: 's', toolCall: { toolCallId: 'tc', ...toolCall }, options }) as unknown as RequestPermissionRequest;

describe('acpPermissionAction', () => {
  it('execute is an exec of its command, however spelt (string, argv, cmd); else of its title', () => {
    expect(
      acpPermissionAction(request({ kind: 'execute', title: 'Terminal', rawInput: { command: 'ls -l' } })),
    ).toEqual({
      effect: 'exec',
      target: 'ls -l',
      summary: 'Terminal',
    });
    expect(acpPermissionAction(request({ kind: 'execute', rawInput: { command: ['git', 'status'] } })).target).toBe(
      'git status',
    );
    expect(acpPermissionAction(request({ kind: 'execute', rawInput: { cmd: 'make' } })).target).toBe('make');
    expect(acpPermissionAction(request({ kind: 'execute', title: 'run it' })).target).toBe('run it');
  });

  it('edit, delete and move are writes of their path (first location, else raw input), root-relative', () => {
    expect(
      acpPermissionAction(request({ kind: 'edit', title: 'Edit', locations: [{ path: `${ROOT}/src/a.ts` }] }), ROOT),
    ).toEqual({ effect: 'fs.write', target: 'src/a.ts', summary: 'Edit' });
    expect(acpPermissionAction(request({ kind: 'delete', rawInput: { file_path: `${ROOT}/x` } }), ROOT).target).toBe(
      'x',
    );
    expect(acpPermissionAction(request({ kind: 'move', rawInput: { path: '/etc/hosts' } }), ROOT)).toMatchObject({
      effect: 'fs.write',
      target: '/etc/hosts',
    });
    // No root known: the path as the agent gave it.
    expect(acpPermissionAction(request({ kind: 'edit', locations: [{ path: `${ROOT}/a` }] })).target).toBe(`${ROOT}/a`);
  });

  it('read and search are reads; fetch is network to its URL; a kind without a target is an exec of its title', () => {
    expect(acpPermissionAction(request({ kind: 'read', locations: [{ path: `${ROOT}/a.md` }] }), ROOT)).toMatchObject({
      effect: 'fs.read',
      target: 'a.md',
    });
    expect(acpPermissionAction(request({ kind: 'search', rawInput: { abs_path: ROOT } }), ROOT).target).toBe('.');
    expect(acpPermissionAction(request({ kind: 'fetch', rawInput: { url: 'https://x.test' } }))).toMatchObject({
      effect: 'network',
      target: 'https://x.test',
    });
    expect(acpPermissionAction(request({ kind: 'fetch', title: 'Fetch' }))).toMatchObject({ effect: 'exec' });
    expect(acpPermissionAction(request({ kind: 'edit', title: 'Edit' }))).toMatchObject({ effect: 'exec' });
    expect(acpPermissionAction(request({ kind: 'think' }))).toEqual({
      effect: 'exec',
      target: 'think tool call tc',
      summary: 'think tool call tc',
    });
  });

  it('malformed requests never throw', () => {
    const bad = [
      {},
      { toolCall: null },
      { toolCall: { kind: 'edit', locations: 'x' } },
      { toolCall: { kind: 'edit', locations: [null] } },
      { toolCall: { kind: 'execute', rawInput: 5 } },
      { toolCall: { kind: 'execute', rawInput: { command: [1, 2] } } },
      { toolCall: { kind: 7, title: {} } },
    ];
    for (const params of bad) {
      const p = params as unknown as RequestPermissionRequest;
      expect(() => acpPermissionAction(p, ROOT)).not.toThrow();
      expect(() => acpRequestedScope(p)).not.toThrow();
      expect(() => acpOutcome(p, { decision: 'approved' })).not.toThrow();
    }
    expect(acpPermissionAction({} as RequestPermissionRequest).effect).toBe('exec');
  });
});

describe('scope and outcome', () => {
  it('an "always" option offered asks for the session, else once', () => {
    expect(acpRequestedScope(request({}))).toBe('session');
    expect(acpRequestedScope(request({}, [OPTIONS[1], OPTIONS[2]]))).toBe('once');
  });

  it('approved is allow once, never allow always (cancelled when once is not offered); denied is reject', () => {
    expect(acpOutcome(request({}), { decision: 'approved' })).toEqual({
      outcome: { outcome: 'selected', optionId: 'once' },
    });
    expect(acpOutcome(request({}, [OPTIONS[0], OPTIONS[2]]), { decision: 'approved' })).toEqual({
      outcome: { outcome: 'cancelled' },
    });
    expect(acpOutcome(request({}), { decision: 'denied' })).toEqual({
      outcome: { outcome: 'selected', optionId: 'no' },
    });
    expect(acpOutcome(request({}, [OPTIONS[0], OPTIONS[3]]), { decision: 'denied' })).toEqual({
      outcome: { outcome: 'selected', optionId: 'never' },
    });
    expect(acpOutcome(request({}, [OPTIONS[1]]), { decision: 'denied' })).toEqual({
      outcome: { outcome: 'cancelled' },
    });
  });

  it('workspaceRelative: relative inside the root, as given outside or without a root', () => {
    expect(workspaceRelative(ROOT, `${ROOT}/a`)).toBe('a');
    expect(workspaceRelative(ROOT, '/etc')).toBe('/etc');
    expect(workspaceRelative(undefined, `${ROOT}/a`)).toBe(`${ROOT}/a`);
  });
});
