// The command lines of the built-in harness runners (their own parts: runners/claude-code/claudeCode.ts,
// runners/codex/codex.ts).
import { describe, expect, it } from 'vitest';
import { claudeArgs } from '../../../runners/claude-code/claudeCode.js';
import { codexArgs } from '../../../runners/codex/codex.js';

describe('harness command lines', () => {
  it('mounts become --add-dir; Codex workspace-write gets network access only with a proxy', () => {
    expect(
      claudeArgs({
        prompt: 'p',
        model: 'm',
        permissionMode: 'dontAsk',
        allowedTools: [],
        disallowedTools: [],
        maxTurns: 1,
        addDirs: ['/w/in/mounts/a', '/w/in/mounts/b'],
      }).slice(-3),
    ).toEqual(['--add-dir', '/w/in/mounts/a', '/w/in/mounts/b']);
    const codex = (o: { egress?: boolean; sandbox: 'read-only' | 'workspace-write' }) =>
      codexArgs({
        prompt: 'p',
        baseUrl: 'u',
        model: 'm',
        codexModel: 'gpt-5.5',
        mcp: {},
        tokenEnv: 'T',
        addDirs: ['/r'],
        ...o,
      });
    expect(codex({ egress: true, sandbox: 'workspace-write' })).toContain(
      'sandbox_workspace_write.network_access=true',
    );
    expect(codex({ egress: false, sandbox: 'workspace-write' })).not.toContain(
      'sandbox_workspace_write.network_access=true',
    );
    expect(codex({ egress: true, sandbox: 'read-only' })).not.toContain('sandbox_workspace_write.network_access=true');
    expect(codex({ sandbox: 'read-only' }).join(' ')).toContain('--add-dir /r');
  });
});
