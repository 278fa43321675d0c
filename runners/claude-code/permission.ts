// Claude Code's permission prompts, answered by the host (docs/approvals.md, "Harness bridges"): with
// `--permission-prompt-tool stdio` the CLI writes a `control_request` (`can_use_tool`) for every tool use its rules
// do not settle, and waits for the `control_response` on stdin.
import { isAbsolute, relative } from 'node:path';
import type { ApprovalRequestResult, Effect } from 'paddock/sdk';

type Obj = Record<string, unknown>;

/** The action a tool use asks the host to approve (the host classifies the target again itself). */
export interface ClaudeToolAction {
  effect: Effect;
  target: string;
  summary: string;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 ? v : undefined);

/** A path as the host's workspace sees it: relative when it lies in the run's workspace, as given otherwise. */
export function workspaceRelative(root: string, path: string): string {
  if (!isAbsolute(path)) return path;
  const rel = relative(root, path);
  return rel === '' ? '.' : rel.startsWith('..') || isAbsolute(rel) ? path : rel;
}

/**
 * The action of one tool use, by tool: Bash → exec of its command; Edit, MultiEdit, Write, NotebookEdit → fs.write of
 * the file; Read, Glob, Grep, LS → fs.read of the path; WebFetch → network to the URL, WebSearch → network; any other
 * tool (or one whose target is missing) → exec of the tool's name and input, which the host asks about by default.
 */
export function claudeToolAction(toolName: string, input: unknown, root: string): ClaudeToolAction {
  const i = (input !== null && typeof input === 'object' ? input : {}) as Obj;
  const other = (): ClaudeToolAction => {
    const shown = `${toolName} ${JSON.stringify(input ?? {})}`.slice(0, 2_000);
    return { effect: 'exec', target: shown, summary: `Claude Code wants to use ${toolName}` };
  };
  switch (toolName) {
    case 'Bash': {
      const command = str(i.command);
      return command ? { effect: 'exec', target: command, summary: str(i.description) ?? `run ${command}` } : other();
    }
    case 'Edit':
    case 'MultiEdit':
    case 'Write':
    case 'NotebookEdit': {
      const path = str(i.file_path) ?? str(i.notebook_path);
      return path
        ? { effect: 'fs.write', target: workspaceRelative(root, path), summary: `${toolName} ${path}` }
        : other();
    }
    case 'Read':
    case 'Glob':
    case 'Grep':
    case 'LS': {
      const path = str(i.file_path) ?? str(i.path) ?? root;
      return { effect: 'fs.read', target: workspaceRelative(root, path), summary: `${toolName} ${path}` };
    }
    case 'WebFetch': {
      const url = str(i.url);
      return url ? { effect: 'network', target: url, summary: `fetch ${url}` } : other();
    }
    case 'WebSearch':
      return { effect: 'network', target: 'web-search', summary: `search the web: ${str(i.query) ?? ''}` };
    default:
      return other();
  }
}

/** A `can_use_tool` control request, if `value` is one. */
export function canUseToolRequest(
  value: Obj,
): { requestId: string; toolName: string; input: unknown; toolUseId?: string } | undefined {
  if (value.type !== 'control_request') return undefined;
  const request = value.request as Obj | undefined;
  const requestId = str(value.request_id);
  if (!requestId || request?.subtype !== 'can_use_tool') return undefined;
  return {
    requestId,
    toolName: str(request.tool_name) ?? 'unknown',
    input: request.input,
    ...(str(request.tool_use_id) ? { toolUseId: str(request.tool_use_id) } : {}),
  };
}

/** The control response to a `can_use_tool` request: allow with the input unchanged, or deny with the reason. */
export function permissionResponse(
  requestId: string,
  input: unknown,
  answer: Pick<ApprovalRequestResult, 'decision' | 'reason'>,
): Obj {
  const response =
    answer.decision === 'approved'
      ? { behavior: 'allow', updatedInput: input ?? {} }
      : { behavior: 'deny', message: `paddock: ${answer.reason ?? 'denied by the host'}` };
  return { type: 'control_response', response: { subtype: 'success', request_id: requestId, response } };
}

/** The answer to a control request paddock does not serve (hooks, in-process MCP, elicitation): an error. */
export function unsupportedControl(value: Obj): Obj | undefined {
  if (value.type !== 'control_request') return undefined;
  const requestId = str(value.request_id);
  if (!requestId) return undefined;
  const subtype = str((value.request as Obj | undefined)?.subtype) ?? 'unknown';
  return {
    type: 'control_response',
    response: { subtype: 'error', request_id: requestId, error: `paddock does not serve ${subtype}` },
  };
}
