// A session's or run's stored events (the API's SSE `data`) as lines a person reads: message text, tool calls,
// host requests, approvals, the outcome — never the raw JSON. Every field comes from runners, models or users and
// is returned as plain text for Preact to escape.

/** One stored event as the streams send it (`{ id, sessionId, seq, type, runId, at, data }`). */
export interface StoredEvent {
  id: string;
  sessionId: string;
  seq: number;
  type: string;
  runId: string | null;
  at: string;
  data: unknown;
}

/** An event as one readable line: a short label, the sentence, and a tone for its badge. */
export interface EventLine {
  /** The first event's seq (a line may fold several streamed deltas). */
  seq: number;
  at: string;
  runId: string | null;
  label: string;
  text: string;
  tone?: 'ok' | 'bad' | 'warn';
  /** The stored events behind the line (for the "details" view). */
  events: StoredEvent[];
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : {});
const str = (v: unknown): string => (typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v));

/**
 * Characters of one message or output shown on a line: a runner may send megabytes in one message, which the browser
 * would lay out for a minute (outside attack on issue 15, finding 4); the rest is under "details".
 */
export const SHOWN_TEXT = 20_000;

/** Characters of a line's stored JSON shown under "details". */
export const SHOWN_JSON = 200_000;

/** At most `max` characters of `text`, marked when clipped. */
export function clip(text: string, max = 400): string {
  return text.length > max ? `${text.slice(0, max)}… (${text.length - max} more characters)` : text;
}

/** The text of message parts: text parts as they are, other parts named. */
export function partsText(parts: unknown): string {
  if (!Array.isArray(parts)) return '';
  return parts
    .map((p) => {
      const part = obj(p);
      if (part.type === 'text') return str(part.text);
      if (part.type === 'file') return `[file ${str(part.name)}]`;
      if (part.type === 'image') return `[image${part.alt ? ` ${str(part.alt)}` : ''}]`;
      if (part.type === 'mention') return `@${str(part.name) || str(part.userId)}`;
      if (part.type === 'quote') return `> ${str(part.text)}`;
      return `[${str(part.type)}]`;
    })
    .join(' ');
}

/** A JSON value in one short line (tool inputs and outputs: a summary, the whole value is under "details"). */
function brief(value: unknown): string {
  if (value === undefined) return '';
  if (typeof value === 'string') return clip(value, 200);
  try {
    return clip(JSON.stringify(value), 200);
  } catch {
    return '';
  }
}

/** A usage record: "1 200 in / 300 out tokens, $0.0123, model m". */
export function usageText(usage: unknown): string {
  const u = obj(usage);
  const bits: string[] = [];
  if (typeof u.inputTokens === 'number' || typeof u.outputTokens === 'number')
    bits.push(
      `${Number(u.inputTokens ?? 0).toLocaleString()} in / ${Number(u.outputTokens ?? 0).toLocaleString()} out tokens`,
    );
  if (typeof u.costUsd === 'number') bits.push(`$${u.costUsd.toFixed(4)}`);
  if (typeof u.turns === 'number') bits.push(`${u.turns} turns`);
  if (u.model) bits.push(`model ${str(u.model)}`);
  return bits.join(', ');
}

/** A scope or target: "`value` (kind)". */
const target = (t: unknown) => `${str(obj(t).value)} (${str(obj(t).kind)})`;

/** What one run update says. */
function updateLine(update: Obj): Pick<EventLine, 'label' | 'text' | 'tone'> {
  switch (update.kind) {
    case 'message.delta':
      return { label: 'assistant', text: str(update.text) };
    case 'message':
      return { label: str(update.role) || 'assistant', text: partsText(update.parts) };
    case 'tool.started': {
      const input = brief(update.input);
      const title = update.title ? ` — ${str(update.title)}` : '';
      return { label: 'tool call', text: `${str(update.name)}${title}${input ? `: ${input}` : ''}` };
    }
    case 'tool.finished': {
      const status = str(update.status);
      const more = update.error
        ? `: ${str(update.error)}`
        : update.output !== undefined
          ? `: ${brief(update.output)}`
          : '';
      return {
        label: 'tool result',
        text: `${str(update.toolCallId)} ${status}${more}`,
        tone: status === 'ok' ? 'ok' : status === 'cancelled' ? 'warn' : 'bad',
      };
    }
    case 'progress': {
      const percent = typeof update.percent === 'number' ? ` (${update.percent}%)` : '';
      return { label: 'progress', text: `${str(update.message)}${percent}` };
    }
    case 'usage':
      return { label: 'usage', text: `${usageText(update.usage)}${update.cumulative ? ' so far' : ''}` };
    case 'artifact':
      return { label: 'artifact', text: `${str(update.name)} (${str(update.path)})` };
    case 'log': {
      const level = str(update.level) || 'info';
      return {
        label: `log ${level}`,
        text: str(update.message),
        tone: level === 'error' ? 'bad' : level === 'warn' ? 'warn' : undefined,
      };
    }
    default:
      return { label: str(update.kind) || 'update', text: brief(update) };
  }
}

/** The outcome of a run as a sentence and a tone. */
function endedLine(d: Obj): Pick<EventLine, 'label' | 'text' | 'tone'> {
  const status = str(d.status);
  const output = partsText(obj(obj(d.result).output).parts);
  const error = str(obj(obj(d.result).error).message);
  const usage = usageText(d.usage);
  const limits = Array.isArray(d.limits) && d.limits.length > 0 ? ` Limits hit: ${d.limits.map(str).join(', ')}.` : '';
  const text =
    `Run ended ${status}${d.reason ? ` (${str(d.reason)})` : ''}.` +
    (output ? ` Output: ${clip(output, 2000)}` : '') +
    (error ? ` Error: ${error}` : '') +
    (usage ? ` Usage: ${usage}.` : '') +
    limits;
  return { label: 'outcome', text, tone: status === 'completed' ? 'ok' : status === 'cancelled' ? 'warn' : 'bad' };
}

/** What one stored event says, as a label, a sentence and a tone. */
export function describe(e: StoredEvent): Pick<EventLine, 'label' | 'text' | 'tone'> {
  const d = obj(e.data);
  switch (e.type) {
    case 'session.created':
      return { label: 'session', text: `Session created for binding ${str(d.bindingId)} (${str(d.conversationKey)})` };
    case 'message.received': {
      const event = obj(d.event);
      const sender = obj(event.sender);
      const who = str(sender.name) || str(sender.id) || 'someone';
      const appended = d.appended ? ' (delivered to the running run)' : '';
      return { label: 'message', text: `${who}: ${partsText(obj(event.message).parts)}${appended}` };
    }
    case 'run.queued':
      return { label: 'queued', text: `Run queued for runner ${str(d.runner)} (attempt ${str(d.attempt)})` };
    case 'run.started':
      return { label: 'started', text: 'Run started' };
    case 'run.update':
      return updateLine(obj(d.update));
    case 'run.notice':
      return { label: 'host notice', text: str(obj(d.update).message) || partsText(obj(d.update).parts), tone: 'warn' };
    case 'run.request': {
      const decision = d.decision === 'accepted' ? 'accepted' : `refused: ${str(obj(d.decision).reason)}`;
      return {
        label: 'request',
        text: `${str(d.method)} ${decision}`,
        tone: d.decision === 'accepted' ? undefined : 'bad',
      };
    }
    case 'run.ended':
      return endedLine(d);
    case 'run.interrupted':
      return { label: 'interrupted', text: `Run interrupted: ${str(d.reason)}`, tone: 'bad' };
    case 'external.saved': {
      const x = obj(d.external);
      const bits = [
        x.sessionId ? `harness session ${str(x.sessionId)}` : '',
        x.workingDirectory ? `folder ${str(x.workingDirectory)}` : '',
      ];
      return { label: 'resume', text: `Resume pointers saved: ${bits.filter(Boolean).join(', ') || 'none'}` };
    }
    case 'approval.requested': {
      const risk = obj(d.risk);
      return {
        label: 'approval asked',
        text:
          `${str(d.effect)} of ${target(d.target)}, ${str(risk.level)} risk` +
          (d.summary ? `: ${clip(str(d.summary))}` : ''),
        tone: 'warn',
      };
    }
    case 'approval.decided':
      return {
        label: str(d.decision),
        text:
          `${str(d.effect)} of ${target(d.target)} ${str(d.decision)} by ${str(d.by)}` +
          (d.reason ? `: ${str(d.reason)}` : ''),
        tone: d.decision === 'approved' ? 'ok' : 'bad',
      };
    case 'run.tainted':
      return { label: 'tainted', text: `Read ${str(d.dataClass)} data from ${str(d.source)}`, tone: 'warn' };
    case 'file.changed':
      return { label: 'file', text: `${str(d.path)} ${str(d.change)} (${str(d.via)})` };
    case 'workspace.compared':
      return { label: 'workspace', text: `Workspace compared: ${str(d.changed)} changed, ${str(d.recorded)} recorded` };
    case 'effect.intent':
      return { label: 'effect', text: `${str(d.kind)} of ${str(d.target)} started` };
    case 'effect.result':
      return { label: 'effect', text: `${str(d.effectId)} ${str(d.status)}${d.detail ? `: ${str(d.detail)}` : ''}` };
    case 'effect.reconciled':
    case 'effect.resolved':
      return { label: 'effect', text: `${str(d.effectId)} ${str(d.status)} (${str(d.how) || str(d.by)})` };
    case 'session.paused':
      return { label: 'paused', text: `Session paused: ${str(d.reason)}`, tone: 'bad' };
    case 'session.resumed':
      return { label: 'resumed', text: `Session resumed by ${str(d.by)}`, tone: 'ok' };
    default:
      return { label: e.type, text: '' };
  }
}

/** Whether `e` is a streamed text fragment of an assistant message. */
function deltaOf(e: StoredEvent): { messageId: string; text: string } | undefined {
  if (e.type !== 'run.update') return undefined;
  const update = obj(obj(e.data).update);
  if (update.kind !== 'message.delta') return undefined;
  return { messageId: str(update.messageId), text: str(update.text) };
}

/**
 * Events in seq order as lines: consecutive text deltas of one message of one run fold into one line (a streamed
 * reply reads as its text, not one line per fragment).
 */
export function eventLines(events: StoredEvent[]): EventLine[] {
  const lines: EventLine[] = [];
  const effects = new Map<string, string>();
  for (const e of events) {
    const delta = deltaOf(e);
    const last = lines.at(-1);
    const previous = last?.events.at(-1);
    const previousDelta = previous ? deltaOf(previous) : undefined;
    if (delta && last && previousDelta && previous?.runId === e.runId && previousDelta.messageId === delta.messageId) {
      last.text += delta.text;
      last.events.push(e);
      continue;
    }
    const line = { seq: e.seq, at: e.at, runId: e.runId, ...describe(e), events: [e] };
    // A host-side effect's result names only its id: say which effect it was (from its intent).
    const effect = obj(e.data);
    if (e.type === 'effect.intent') effects.set(str(effect.effectId), `${str(effect.kind)} of ${str(effect.target)}`);
    else if (e.type.startsWith('effect.') && effects.has(str(effect.effectId)))
      line.text = line.text.replace(str(effect.effectId), effects.get(str(effect.effectId))!);
    lines.push(line);
  }
  return lines;
}

/** The resume pointers a session's events saved last (`external.saved`), if any. */
export function resumePointers(events: StoredEvent[]): { runId: string | null; at: string; external: Obj } | undefined {
  const saved = events.filter((e) => e.type === 'external.saved').at(-1);
  return saved ? { runId: saved.runId, at: saved.at, external: obj(obj(saved.data).external) } : undefined;
}
