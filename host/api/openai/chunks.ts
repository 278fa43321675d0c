/**
 * Reply pieces and a run's end → OpenAI `chat.completion.chunk` objects and one `chat.completion`
 * (docs/http-api.md, "OpenAI-compatible endpoint"). Pure.
 */
import type { RunEnd } from './reply.js';

/** What every object of one answer shares. */
export interface CompletionIds {
  /** `chatcmpl-<runId>`: a client can find the run from the id it got. */
  id: string;
  model: string;
  /** Unix seconds. */
  created: number;
}

/** OpenAI's usage object. */
export interface OpenAIUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** The ids of the answer for run `runId`. */
export function completionIds(runId: string, model: string, now: Date = new Date()): CompletionIds {
  return { id: `chatcmpl-${runId}`, model, created: Math.floor(now.getTime() / 1000) };
}

/**
 * OpenAI's `finish_reason` for a run's end: `stop` when it completed; `error` otherwise (not one of OpenAI's values —
 * none fits a failed run; the error event that follows carries the outcome).
 */
export function finishReason(end: RunEnd): 'stop' | 'error' {
  return end.status === 'completed' ? 'stop' : 'error';
}

/**
 * The host-metered usage of the run (model calls through its gateway) in OpenAI's shape; undefined when the run
 * recorded none. The runner's own unverified figures are not used.
 */
export function openAIUsage(end: RunEnd): OpenAIUsage | undefined {
  const usage = end.usage;
  if (!usage || (usage.inputTokens === undefined && usage.outputTokens === undefined)) return undefined;
  const prompt = usage.inputTokens ?? 0;
  const completion = usage.outputTokens ?? 0;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

/** A `chat.completion.chunk` with one choice. */
export function chunk(
  ids: CompletionIds,
  delta: { role?: 'assistant'; content?: string },
  finish: string | null = null,
) {
  return {
    id: ids.id,
    object: 'chat.completion.chunk' as const,
    created: ids.created,
    model: ids.model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  };
}

/** The last chunk when the client asked for `stream_options.include_usage`: no choices, the usage. */
export function usageChunk(ids: CompletionIds, usage: OpenAIUsage | null) {
  return {
    id: ids.id,
    object: 'chat.completion.chunk' as const,
    created: ids.created,
    model: ids.model,
    choices: [],
    usage,
  };
}

/** The whole answer of a completed run. */
export function completion(ids: CompletionIds, text: string, end: RunEnd) {
  const usage = openAIUsage(end);
  return {
    id: ids.id,
    object: 'chat.completion' as const,
    created: ids.created,
    model: ids.model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant' as const, content: text, refusal: null },
        logprobs: null,
        finish_reason: finishReason(end),
      },
    ],
    ...(usage ? { usage } : {}),
  };
}

/** One Server-Sent Events message carrying `value` as JSON (OpenAI's streams name no event). */
export function sseData(value: unknown): string {
  return `data: ${JSON.stringify(value)}\n\n`;
}

/** The end of an OpenAI stream. */
export const SSE_DONE = 'data: [DONE]\n\n';
