/**
 * `POST /v1/chat/completions` request → paddock chat event (docs/http-api.md, "OpenAI-compatible endpoint"). Pure: no
 * Fastify, no store. Only the last `user` message is taken: earlier messages are not replayed, the session keeps the
 * conversation's history.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { ChatEvent } from '../../../sdk/protocol/types.js';
import { clip } from '../../util/clip.js';
import { openAIError, type OpenAIHttpError } from './errors.js';

/** The platform name of events this endpoint dispatches (a binding's `route.platform` may name it). */
export const OPENAI_PLATFORM = 'openai';
/** Header naming the conversation (wins over the `user` field). */
export const CONVERSATION_HEADER = 'x-paddock-conversation';
/** Header naming the event id (a redelivery with the same id never runs twice). */
export const EVENT_ID_HEADER = 'x-paddock-event-id';

const Id = z.string().min(1).max(256);
const MessageSchema = z.looseObject({
  role: z.string().min(1),
  // Earlier messages may hold anything OpenAI allows (they are not replayed); the last user message is checked below.
  content: z.union([z.string(), z.array(z.looseObject({ type: z.string() })), z.null()]).optional(),
});

/**
 * The fields of an OpenAI chat completion request this endpoint reads. Others (`temperature`, `max_tokens`, `tools`,
 * …) are accepted and ignored: the binding decides how its runner works.
 */
export const ChatCompletionRequestSchema = z.looseObject({
  model: Id,
  messages: z.array(MessageSchema).min(1),
  stream: z.boolean().nullable().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullable().optional(),
  user: Id.optional(),
  // One choice per request: a run has one reply.
  n: z.literal(1).nullable().optional(),
});

/** A parsed request, ready to dispatch. */
export interface ChatRequest {
  model: string;
  stream: boolean;
  includeUsage: boolean;
  /** The event to dispatch (platform `openai`, bot = the binding id). */
  event: ChatEvent;
}

/** Request headers as Node gives them. */
export type Headers = Record<string, string | string[] | undefined>;

/** A field path as clients write it: `messages[0].content[1].type`. */
export function fieldPath(path: readonly PropertyKey[]): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i === 0 ? '' : '.'}${String(p)}`)).join('');
}

/** The text of the last `user` message, or the problems that stop it being one (each with its field path). */
function lastUserText(messages: z.infer<typeof MessageSchema>[]): { text: string } | { errors: Problem[] } {
  let index = messages.length - 1;
  while (index >= 0 && messages[index]!.role !== 'user') index -= 1;
  if (index < 0) return { errors: [{ path: 'messages', message: 'no message has role "user"' }] };
  const content = messages[index]!.content;
  const at = `messages[${index}].content`;
  if (typeof content === 'string') {
    return content.trim() ? { text: content } : { errors: [{ path: at, message: 'the message is empty' }] };
  }
  if (!Array.isArray(content) || content.length === 0)
    return { errors: [{ path: at, message: 'the last user message has no content' }] };
  const errors: Problem[] = [];
  const texts: string[] = [];
  content.forEach((part, j) => {
    if (part.type !== 'text') {
      errors.push({
        path: `${at}[${j}].type`,
        message: `only text content parts are supported (got ${JSON.stringify(clip(part.type, 40))})`,
      });
    } else if (typeof part.text !== 'string') {
      errors.push({ path: `${at}[${j}].text`, message: 'a text part needs a string "text"' });
    } else texts.push(part.text);
  });
  if (errors.length) return { errors };
  const text = texts.join('\n');
  return text.trim() ? { text } : { errors: [{ path: at, message: 'the message is empty' }] };
}

interface Problem {
  path: string;
  message: string;
}

/** One header's value: absent, one valid id, or a problem naming the header. */
function headerId(headers: Headers, name: string): { value?: string; error?: Problem } {
  const raw = headers[name];
  if (raw === undefined) return {};
  if (Array.isArray(raw)) return { error: { path: `header ${name}`, message: 'given more than once' } };
  return Id.safeParse(raw).success
    ? { value: raw }
    : { error: { path: `header ${name}`, message: 'must be 1 to 256 characters' } };
}

/**
 * Parse a request body and its headers into the event to dispatch, or a 400 naming every problem at once
 * (`error.errors[]`, each `{ path, message }`; `error.param` is the first path).
 */
export function parseChatRequest(
  body: unknown,
  headers: Headers,
  now: () => Date = () => new Date(),
): ChatRequest | OpenAIHttpError {
  const problems: Problem[] = [];
  const conversation = headerId(headers, CONVERSATION_HEADER);
  const eventId = headerId(headers, EVENT_ID_HEADER);
  for (const h of [conversation, eventId]) if (h.error) problems.push(h.error);
  const parsed = ChatCompletionRequestSchema.safeParse(body);
  if (!parsed.success) {
    for (const issue of parsed.error.issues)
      problems.push({ path: fieldPath(issue.path) || 'body', message: issue.message });
  }
  const user = parsed.success ? lastUserText(parsed.data.messages) : undefined;
  if (user && 'errors' in user) problems.push(...user.errors);
  if (problems.length || !parsed.success || !user || !('text' in user)) {
    return openAIError(
      400,
      'invalid_request',
      `invalid request: ${problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`,
      { param: problems[0]?.path ?? null, errors: problems },
    );
  }
  const request = parsed.data;
  const conversationId = conversation.value ?? request.user ?? `oai-${randomUUID()}`;
  return {
    model: request.model,
    stream: request.stream === true,
    includeUsage: request.stream_options?.include_usage === true,
    event: {
      id: eventId.value ?? `oai-${randomUUID()}`,
      type: 'message',
      platform: OPENAI_PLATFORM,
      bot: request.model,
      conversation: { type: 'private', id: conversationId },
      sender: { id: request.user ?? 'openai-client' },
      message: { parts: [{ type: 'text', text: user.text }] },
      receivedAt: now().toISOString(),
    },
  };
}
