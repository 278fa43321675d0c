// Claude Code's permission prompts as host actions (runners/claude-code/permission.ts): the action of each tool,
// paths sent workspace-relative, the control responses, and inputs of any shape never throwing.
import { describe, expect, it } from 'vitest';
import {
  canUseToolRequest,
  claudeToolAction,
  permissionResponse,
  unsupportedControl,
  workspaceRelative,
} from '../../../runners/claude-code/permission.js';

const ROOT = '/tmp/paddock-x/workspaces/run_1';

describe('claudeToolAction', () => {
  it('Bash is an exec of its command, summarised by its description', () => {
    expect(claudeToolAction('Bash', { command: 'make test', description: 'run the tests' }, ROOT)).toEqual({
      effect: 'exec',
      target: 'make test',
      summary: 'run the tests',
    });
    expect(claudeToolAction('Bash', { command: 'ls' }, ROOT).summary).toBe('run ls');
  });

  it('Write, Edit, MultiEdit and NotebookEdit are writes of their file, relative to the workspace when inside', () => {
    for (const tool of ['Write', 'Edit', 'MultiEdit'])
      expect(claudeToolAction(tool, { file_path: `${ROOT}/src/a.ts`, content: 'x' }, ROOT)).toMatchObject({
        effect: 'fs.write',
        target: 'src/a.ts',
      });
    expect(claudeToolAction('NotebookEdit', { notebook_path: `${ROOT}/n.ipynb` }, ROOT).target).toBe('n.ipynb');
    // Outside the workspace: the absolute path, for the host's policy to judge.
    expect(claudeToolAction('Write', { file_path: '/etc/passwd' }, ROOT).target).toBe('/etc/passwd');
    expect(claudeToolAction('Write', { file_path: `${ROOT}-other/a` }, ROOT).target).toBe(`${ROOT}-other/a`);
  });

  it('Read, Glob, Grep and LS are reads of their path (the workspace itself when none is named)', () => {
    expect(claudeToolAction('Read', { file_path: `${ROOT}/README.md` }, ROOT)).toMatchObject({
      effect: 'fs.read',
      target: 'README.md',
    });
    expect(claudeToolAction('Grep', { pattern: 'x', path: `${ROOT}/src` }, ROOT).target).toBe('src');
    expect(claudeToolAction('Glob', { pattern: '**/*.ts' }, ROOT).target).toBe('.');
    expect(claudeToolAction('LS', { path: '/home' }, ROOT)).toMatchObject({ effect: 'fs.read', target: '/home' });
  });

  it('WebFetch is network to its URL, WebSearch network; any other tool an exec naming the tool and its input', () => {
    expect(claudeToolAction('WebFetch', { url: 'https://x.test/a' }, ROOT)).toMatchObject({
      effect: 'network',
      target: 'https://x.test/a',
    });
    expect(claudeToolAction('WebSearch', { query: 'q' }, ROOT)).toMatchObject({ effect: 'network' });
    expect(claudeToolAction('mcp__s__t', { a: 1 }, ROOT)).toEqual({
      effect: 'exec',
      target: 'mcp__s__t {"a":1}',
      summary: 'Claude Code wants to use mcp__s__t',
    });
  });

  it('malformed inputs never throw: a missing target falls back to an exec of the tool', () => {
    for (const input of [undefined, null, 42, 'text', [], { command: 7 }, { file_path: '' }])
      for (const tool of ['Bash', 'Write', 'Read', 'WebFetch', 'WebSearch', 'Other'])
        expect(() => claudeToolAction(tool, input, ROOT)).not.toThrow();
    expect(claudeToolAction('Bash', { command: 7 }, ROOT)).toMatchObject({
      effect: 'exec',
      target: 'Bash {"command":7}',
    });
    expect(claudeToolAction('Write', null, ROOT)).toMatchObject({ effect: 'exec', target: 'Write {}' });
    expect(claudeToolAction('x', { s: 'a'.repeat(5_000) }, ROOT).target.length).toBe(2_000);
  });
});

describe('workspaceRelative', () => {
  it('relative inside the root, "." for the root, as given outside or when already relative', () => {
    expect(workspaceRelative(ROOT, `${ROOT}/a/b`)).toBe('a/b');
    expect(workspaceRelative(ROOT, ROOT)).toBe('.');
    expect(workspaceRelative(ROOT, `${ROOT}/../x`)).toBe(`${ROOT}/../x`);
    expect(workspaceRelative(ROOT, 'a/../b')).toBe('a/../b');
  });
});

describe('control requests and responses', () => {
  const prompt = {
    type: 'control_request',
    request_id: 'r1',
    request: { subtype: 'can_use_tool', tool_name: 'Write', input: { file_path: '/a' }, tool_use_id: 'tu_1' },
  };

  it('a can_use_tool request is read with its id, tool, input and tool use id; anything else is not one', () => {
    expect(canUseToolRequest(prompt)).toEqual({
      requestId: 'r1',
      toolName: 'Write',
      input: { file_path: '/a' },
      toolUseId: 'tu_1',
    });
    expect(canUseToolRequest({ ...prompt, request_id: undefined })).toBeUndefined();
    expect(canUseToolRequest({ ...prompt, request: { subtype: 'hook_callback' } })).toBeUndefined();
    expect(canUseToolRequest({ type: 'assistant' })).toBeUndefined();
    for (const request of [null, 'x', 3, []])
      expect(() => canUseToolRequest({ type: 'control_request', request_id: 'r', request })).not.toThrow();
    expect(canUseToolRequest({ ...prompt, request: { subtype: 'can_use_tool' } })).toMatchObject({
      toolName: 'unknown',
    });
  });

  it('approved: allow with the input unchanged; denied: deny with the reason', () => {
    expect(permissionResponse('r1', { file_path: '/a' }, { decision: 'approved' })).toEqual({
      type: 'control_response',
      response: {
        subtype: 'success',
        request_id: 'r1',
        response: { behavior: 'allow', updatedInput: { file_path: '/a' } },
      },
    });
    expect(permissionResponse('r1', undefined, { decision: 'approved' }).response).toMatchObject({
      response: { behavior: 'allow', updatedInput: {} },
    });
    expect(permissionResponse('r1', {}, { decision: 'denied', reason: 'no' }).response).toMatchObject({
      response: { behavior: 'deny', message: 'paddock: no' },
    });
    expect(permissionResponse('r1', {}, { decision: 'denied' }).response).toMatchObject({
      response: { behavior: 'deny', message: 'paddock: denied by the host' },
    });
  });

  it('other control requests are answered with an error naming the subtype; non-requests get no answer', () => {
    expect(
      unsupportedControl({ type: 'control_request', request_id: 'r2', request: { subtype: 'mcp_message' } }),
    ).toEqual({
      type: 'control_response',
      response: { subtype: 'error', request_id: 'r2', error: 'paddock does not serve mcp_message' },
    });
    expect(unsupportedControl({ type: 'control_request', request_id: 'r3' })).toMatchObject({
      response: { error: 'paddock does not serve unknown' },
    });
    expect(unsupportedControl({ type: 'control_request' })).toBeUndefined();
    expect(unsupportedControl({ type: 'result' })).toBeUndefined();
  });
});
