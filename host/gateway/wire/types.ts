/** A content block of a normalized assistant message (the SDK's `model/complete` shape). */
export type ReplyBlock =
  { type: 'text'; text: string } | { type: 'tool_use'; id: string; name: string; input: unknown };

/** Tokens of one model call. */
export interface CallUsage {
  inputTokens: number;
  outputTokens: number;
}

/** A model's answer in a wire-neutral form: what the assemblers produce and the scripted provider renders. */
export interface NormalizedReply {
  id: string;
  model: string;
  content: ReplyBlock[];
  /** `end_turn`, `tool_use`, `max_tokens`, … (Anthropic's words; other wires are mapped). */
  stopReason: string;
  usage: CallUsage;
}

/** What the last turn of a request says: a user's words, or a tool's result. */
export type LastInput =
  | { kind: 'user'; text: string }
  /**
   * `alongside`: user text sent in the same message as the results (a message a harness folded into its running
   * turn, e.g. Claude Code taking a steering-`append` message between tool calls).
   */
  | { kind: 'tool_result'; text: string; alongside?: string };

/** The wire formats the gateway serves. */
export type WireFormat = 'anthropic' | 'responses' | 'chat';

/** Collects a streamed (or whole JSON) answer into a {@link NormalizedReply}. */
export interface ReplyAssembler {
  /** Feed raw response text; `onText` hears text deltas as they complete. */
  push(chunk: string): void;
  /** The reply so far (complete once the stream ended). */
  result(): NormalizedReply;
}

/** One wire format: how to read a request, render a reply and assemble a response. */
export interface Wire {
  format: WireFormat;
  /** The last user message or tool result of a request body. */
  lastInput(body: Record<string, unknown>): LastInput | undefined;
  /** Names of the tools the request offers. */
  toolNames(body: Record<string, unknown>): string[];
  /** Render a reply: SSE events when streaming, else one JSON body. */
  render(reply: NormalizedReply, stream: boolean, chunks: number): string[];
  /** An assembler for a response body (SSE when `stream`). */
  assembler(stream: boolean, onText?: (text: string) => void): ReplyAssembler;
  /** An error body in this wire's shape. */
  errorBody(status: number, type: string, message: string): Record<string, unknown>;
}

/**
 * An assembler for a whole JSON answer (not streamed): collects the body, parses it at the end
 * (anything that is not a JSON object, e.g. an HTML error page, reads as `{}`), and hands the
 * normalized reply's text to `onText` in one go.
 */
export function jsonBodyAssembler(
  toReply: (body: Record<string, unknown>) => NormalizedReply,
  onText?: (text: string) => void,
): ReplyAssembler {
  let raw = '';
  return {
    push: (chunk) => void (raw += chunk),
    result: () => {
      let body: Record<string, unknown> = {};
      try {
        const parsed: unknown = JSON.parse(raw);
        if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) body = parsed as Record<string, unknown>;
      } catch {
        /* not JSON */
      }
      const reply = toReply(body);
      for (const b of reply.content) if (b.type === 'text') onText?.(b.text);
      return reply;
    },
  };
}

/** Split text into `n` nearly equal pieces (at least one, never empty ones unless text is empty). */
export function splitText(text: string, n: number): string[] {
  if (n <= 1 || text.length <= 1) return [text];
  const size = Math.ceil(text.length / Math.min(n, text.length));
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

/** Text of a content value that may be a string or a list of typed blocks. */
export function blocksText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((b) =>
      b && typeof b === 'object'
        ? ((b as { text?: unknown; content?: unknown }).text ?? blocksText((b as { content?: unknown }).content))
        : '',
    )
    .filter((t): t is string => typeof t === 'string')
    .join('\n');
}

/** A number field, or 0. */
export function num(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}
