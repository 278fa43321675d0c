import type { ScriptRule } from '../../bindings/schema.js';
import type { LastInput, ReplyBlock, WireFormat } from '../wire/types.js';

/** What the scripted model does with one request (docs/gateway.md, "The scripted provider"). */
export interface ScriptedPlan {
  /** Answer with this HTTP status for the first `times` attempts of the same request (undefined: always). */
  error?: { status: number; times?: number };
  content: ReplyBlock[];
  stopReason: 'end_turn' | 'tool_use' | 'max_tokens';
  delayMs: number;
  chunks: number;
  chunkDelayMs: number;
}

const num = (m: RegExpExecArray | null, i = 1) => (m?.[i] !== undefined ? Number(m[i]) : undefined);

/** A tool call in the shape the request's wire and offered tools expect. */
export function scriptedToolCall(
  name: string,
  arg: string,
  offered: string[],
  format: WireFormat,
  id: string,
): Extract<ReplyBlock, { type: 'tool_use' }> {
  let object: Record<string, unknown> | undefined;
  try {
    const parsed: unknown = JSON.parse(arg);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) object = parsed as Record<string, unknown>;
  } catch {
    /* a plain argument */
  }
  const shell = name === 'Bash' || name === 'shell' || name === 'exec_command';
  if (format !== 'anthropic' && shell) {
    // Codex offers `exec_command {cmd}` (0.171); older ones `shell {command: argv}`.
    if (offered.includes('exec_command'))
      return { type: 'tool_use', id, name: 'exec_command', input: object ?? { cmd: arg } };
    if (offered.includes('shell'))
      return { type: 'tool_use', id, name: 'shell', input: object ?? { command: ['bash', '-lc', arg] } };
  }
  if (object) return { type: 'tool_use', id, name, input: object };
  if (name === 'Bash') return { type: 'tool_use', id, name, input: { command: arg, description: 'scripted command' } };
  if (name === 'Read') return { type: 'tool_use', id, name, input: { file_path: arg } };
  if (name === 'Write') {
    const [path, ...rest] = arg.split('|');
    return { type: 'tool_use', id, name, input: { file_path: path, content: rest.join('|') } };
  }
  return { type: 'tool_use', id, name, input: { input: arg } };
}

/**
 * Decide the reply to a request: the model's script rules first, then the built-in directives
 * in the last user text, then the tool-result echo, then a greeting numbered by request.
 */
export function planReply(
  input: LastInput | undefined,
  rules: ScriptRule[],
  ctx: {
    offered: string[];
    format: WireFormat;
    requestNumber: number;
    callId: string;
    prior?: { role: string; text: string }[];
  },
): ScriptedPlan {
  const text = input?.text ?? '';
  const plan: ScriptedPlan = { content: [], stopReason: 'end_turn', delayMs: 0, chunks: 1, chunkDelayMs: 0 };
  const say = (t: string) => (plan.content = [{ type: 'text', text: t }]);
  const rule = rules.find((r) => new RegExp(r.match).test(text));
  if (rule) {
    plan.delayMs = rule.delayMs ?? 0;
    plan.chunks = rule.chunks ?? 1;
    plan.chunkDelayMs = rule.chunkDelayMs ?? 0;
    if (rule.error) plan.error = { status: rule.error, times: rule.times };
    if (rule.tool) {
      plan.content = [
        scriptedToolCall(rule.tool.name, JSON.stringify(rule.tool.input), ctx.offered, ctx.format, ctx.callId),
      ];
      plan.stopReason = 'tool_use';
    } else say(rule.reply ?? `Scripted rule /${rule.match}/ matched (request #${ctx.requestNumber}).`);
    return plan;
  }
  if (input?.kind === 'tool_result') {
    // A user message that came with the results (folded into the running turn) is answered when it says what to say.
    const said = /SAY:([^\n]*)/.exec(input.alongside ?? '');
    say(said ? said[1]!.trim() : `TOOL_RESULT_SEEN: ${text.slice(0, 200)}`);
    return plan;
  }
  const fail = /FAIL:(\d{3})(?:x(\d+))?/.exec(text);
  if (fail) plan.error = { status: Number(fail[1]), times: num(fail, 2) };
  plan.delayMs = num(/DELAY:(\d+)/.exec(text)) ?? 0;
  plan.chunkDelayMs = num(/SLOW:(\d+)/.exec(text)) ?? 0;
  const long = num(/LONG:(\d+)/.exec(text));
  const tool = /USE_TOOL:([A-Za-z0-9_.-]+):([^\n]*)/.exec(text);
  const sayText = /SAY:([^\n]*)/.exec(text);
  if (/SEEN_HISTORY/.test(text)) {
    // What the model was shown before the last user message, for history tests.
    const prior = ctx.prior ?? [];
    say(`SEEN ${prior.length}: ${prior.map((m) => `${m.role}: ${m.text.slice(0, 200)}`).join(' | ')}`);
  } else if (tool) {
    plan.content = [scriptedToolCall(tool[1]!, tool[2]!.trim(), ctx.offered, ctx.format, ctx.callId)];
    plan.stopReason = 'tool_use';
  } else if (long) {
    plan.chunks = long;
    say(Array.from({ length: long }, (_, i) => `chunk ${i + 1}`).join(' ') + '.');
  } else if (sayText) say(sayText[1]!.trim());
  else say(`Hello from the scripted model (request #${ctx.requestNumber}).`);
  return plan;
}

/**
 * The user and assistant messages of a request before its last user message, in any wire format
 * (`messages` of Anthropic and Chat, `input` of Responses); tool results and system entries left out.
 */
export function priorMessages(
  body: Record<string, unknown>,
  textOf: (content: unknown) => string,
): { role: string; text: string }[] {
  const list = (Array.isArray(body.messages) ? body.messages : Array.isArray(body.input) ? body.input : []) as Record<
    string,
    unknown
  >[];
  const turns = list.filter(
    (m) => (m?.role === 'user' || m?.role === 'assistant') && (m.type === undefined || m.type === 'message'),
  );
  const lastUser = turns.map((m) => m.role).lastIndexOf('user');
  return turns.slice(0, Math.max(0, lastUser)).map((m) => ({ role: String(m.role), text: textOf(m.content) }));
}
