/**
 * A run's stored events → an OpenAI stream on a Node response (`text/event-stream`): the role chunk, one chunk per
 * reply piece, the last chunk with `finish_reason`, then `[DONE]` (with the usage chunk first when asked) or, for a run
 * that did not complete, OpenAI's mid-stream error message. No Fastify: the route hands over the raw response.
 */
import type { ServerResponse } from 'node:http';
import type { StoredEvent } from '../../state/events.js';
import { chunk, finishReason, openAIUsage, SSE_DONE, sseData, usageChunk, type CompletionIds } from './chunks.js';
import { outcomeError } from './errors.js';
import { RunReply } from './reply.js';

/** Write `text`; when the socket's buffer is full, resolve once it drained or closed (the events wait in the store). */
async function write(res: ServerResponse, text: string): Promise<void> {
  // A destroyed response (the client left, or its token ended) takes nothing and will never drain or close again.
  if (res.destroyed || res.write(text)) return;
  await new Promise<void>((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done).on('close', done);
  });
}

/**
 * Stream the run's reply to `res` (its headers already set, status not yet written). `gone` aborts when the client
 * went away: nothing more is written.
 */
export async function streamReply(
  res: ServerResponse,
  events: AsyncIterable<StoredEvent>,
  options: { ids: CompletionIds; includeUsage: boolean; gone: AbortSignal; headers: Record<string, string> },
): Promise<void> {
  const { ids, gone } = options;
  res.writeHead(200, {
    ...options.headers,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
  });
  const run = new RunReply();
  await write(res, sseData(chunk(ids, { role: 'assistant', content: '' })));
  for await (const event of events) {
    const piece = run.take(event);
    if (piece && !gone.aborted) await write(res, sseData(chunk(ids, { content: piece })));
  }
  if (gone.aborted || !run.end) return;
  await write(res, sseData(chunk(ids, {}, finishReason(run.end))));
  if (run.end.status === 'completed') {
    if (options.includeUsage) await write(res, sseData(usageChunk(ids, openAIUsage(run.end) ?? null)));
    await write(res, SSE_DONE);
  } else {
    // OpenAI's convention for an error mid-stream: a data message holding `error`; the official clients throw it.
    await write(res, sseData(outcomeError(run.end.status, run.end.reason).body));
  }
  res.end();
}
