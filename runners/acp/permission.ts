import { isAbsolute, relative } from 'node:path';
import type { RequestPermissionRequest, RequestPermissionResponse } from '@agentclientprotocol/sdk';
import type { ApprovalRequestResult, Effect } from 'paddock/sdk';

/** The action an ACP permission request asks the host to approve (the host classifies the target again itself). */
export interface AcpAction {
  effect: Effect;
  target: string;
  summary: string;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 ? v : undefined);

/** A path as the host's workspace sees it: relative when it lies in the run's workspace, as given otherwise. */
export function workspaceRelative(root: string | undefined, path: string): string {
  if (!root || !isAbsolute(path)) return path;
  const rel = relative(root, path);
  return rel === '' ? '.' : rel.startsWith('..') || isAbsolute(rel) ? path : rel;
}

/** The command of an `execute` tool call's raw input, however the agent spelt it. */
function commandOf(raw: unknown): string | undefined {
  if (raw === null || typeof raw !== 'object') return str(raw);
  const r = raw as Record<string, unknown>;
  const command = r.command ?? r.cmd;
  if (Array.isArray(command) && command.every((c) => typeof c === 'string')) return command.join(' ');
  return str(command);
}

/** A path the tool call names: its first location, or a path-like field of its raw input. */
function pathOf(toolCall: RequestPermissionRequest['toolCall']): string | undefined {
  const first = Array.isArray(toolCall.locations) ? str(toolCall.locations[0]?.path) : undefined;
  if (first) return first;
  const raw = toolCall.rawInput;
  if (raw === null || typeof raw !== 'object') return undefined;
  const r = raw as Record<string, unknown>;
  return str(r.file_path) ?? str(r.path) ?? str(r.abs_path) ?? str(r.notebook_path);
}

/**
 * The action of one `session/request_permission`, by the tool call's kind: execute → exec of its command; edit,
 * delete, move → fs.write of its path; read, search → fs.read; fetch → network to its URL; anything else (or a
 * call whose target cannot be found) → exec of its title, which the host asks about by default. Paths inside `root`
 * (the run's workspace as the agent sees it) are sent workspace-relative, as the host's path policy names them.
 */
export function acpPermissionAction(params: RequestPermissionRequest, root?: string): AcpAction {
  const call = (params?.toolCall ?? {}) as RequestPermissionRequest['toolCall'];
  const title = str(call.title) ?? `${str(call.kind) ?? 'other'} tool call ${str(call.toolCallId) ?? '?'}`;
  const raw = call.rawInput as Record<string, unknown> | undefined;
  switch (call.kind) {
    case 'execute': {
      const command = commandOf(call.rawInput);
      return { effect: 'exec', target: command ?? title, summary: title };
    }
    case 'edit':
    case 'delete':
    case 'move': {
      const path = pathOf(call);
      return path
        ? { effect: 'fs.write', target: workspaceRelative(root, path), summary: title }
        : { effect: 'exec', target: title, summary: title };
    }
    case 'read':
    case 'search': {
      const path = pathOf(call);
      return path
        ? { effect: 'fs.read', target: workspaceRelative(root, path), summary: title }
        : { effect: 'exec', target: title, summary: title };
    }
    case 'fetch': {
      const url = raw && typeof raw === 'object' ? str(raw.url) : undefined;
      return url
        ? { effect: 'network', target: url, summary: title }
        : { effect: 'exec', target: title, summary: title };
    }
    default:
      return { effect: 'exec', target: title, summary: title };
  }
}

/** The scope to ask for: an "always" option offered means the agent would remember it for the session. */
export function acpRequestedScope(params: RequestPermissionRequest): 'once' | 'session' {
  return Array.isArray(params?.options) && params.options.some((o) => o?.kind === 'allow_always') ? 'session' : 'once';
}

/**
 * The host's answer as the agent's option: approved → allow once (never "always": the agent would stop asking, and a
 * grant the host revokes later could not stop it; the host's own grants answer the next ask at once; an agent that
 * offers no "allow once" is answered cancelled); denied → reject once (or always, or cancelled when the agent offered
 * no rejection).
 */
export function acpOutcome(
  params: RequestPermissionRequest,
  answer: Pick<ApprovalRequestResult, 'decision'>,
): RequestPermissionResponse {
  const options = Array.isArray(params?.options) ? params.options : [];
  const pick = (...kinds: string[]) =>
    kinds.map((k) => options.find((o) => o?.kind === k)).find((o) => o !== undefined);
  const option = answer.decision === 'approved' ? pick('allow_once') : pick('reject_once', 'reject_always');
  return option && typeof option.optionId === 'string'
    ? { outcome: { outcome: 'selected', optionId: option.optionId } }
    : { outcome: { outcome: 'cancelled' } };
}
