import { describe, expect, it } from 'vitest';
import { chunk, completion, completionIds, finishReason, openAIUsage } from '../../../../host/api/openai/chunks.js';
import { outcomeError, problemAsOpenAIError, refusalError } from '../../../../host/api/openai/errors.js';
import { RunReply } from '../../../../host/api/openai/reply.js';
import type { StoredEvent } from '../../../../host/state/events.js';

let seq = 0;
const ev = (type: string, data: unknown, runId = 'run_1'): StoredEvent =>
  ({ id: `e${++seq}`, sessionId: 'ses_1', seq, type, runId, at: '', data }) as StoredEvent;
const upd = (update: unknown) => ev('run.update', { runnerSeq: seq + 1, update });
const ended = (status: string, extra: Record<string, unknown> = {}) =>
  ev('run.ended', { status, reason: `it ${status}`, exitCode: 0, signal: null, ...extra });

describe('RunReply: which updates are reply text', () => {
  it('deltas and assistant messages, not tools, progress, logs, usage, notices or system messages', () => {
    const r = new RunReply();
    const pieces = [
      upd({ kind: 'message.delta', text: 'Hel' }),
      upd({ kind: 'message.delta', text: '' }),
      upd({ kind: 'message.delta', text: 'lo' }),
      upd({ kind: 'tool.started', toolCallId: 't', name: 'bash' }),
      upd({ kind: 'tool.finished', toolCallId: 't', status: 'ok' }),
      upd({ kind: 'progress', message: 'working' }),
      upd({ kind: 'log', level: 'info', message: 'log line' }),
      upd({ kind: 'usage', usage: { inputTokens: 9 }, cumulative: false }),
      upd({ kind: 'message', role: 'system', parts: [{ type: 'text', text: 'SYSTEM' }] }),
      ev('run.notice', { update: { kind: 'log', level: 'warn', message: 'budget' } }),
      upd({
        kind: 'message',
        parts: [
          { type: 'text', text: 'Second' },
          { type: 'image', url: 'x' },
        ],
      }),
      upd({ kind: 'message.delta', text: 'third' }),
      ended('completed', { result: { status: 'completed', output: { parts: [{ type: 'text', text: 'IGNORED' }] } } }),
    ].map((e) => r.take(e));
    expect(pieces.filter(Boolean)).toEqual(['Hel', 'lo', '\n\nSecond', '\n\nthird']);
    expect(r.text).toBe('Hello\n\nSecond\n\nthird');
    expect(r.end).toMatchObject({ status: 'completed', reason: 'it completed' });
  });

  it('deltas of another message id start a new message', () => {
    const r = new RunReply();
    for (const [id, text] of [
      ['a', 'x'],
      ['a', 'y'],
      ['b', 'z'],
    ])
      r.take(upd({ kind: 'message.delta', messageId: id, text }));
    expect(r.text).toBe('xy\n\nz');
  });

  it('nothing streamed: the result output is the reply; an interrupted run ends `interrupted`', () => {
    const r = new RunReply();
    expect(
      r.take(ended('completed', { result: { status: 'completed', output: { parts: [{ type: 'text', text: 'R' }] } } })),
    ).toBe('R');
    const i = new RunReply();
    i.take(ev('run.interrupted', { reason: 'host stopped', killedPid: null }));
    expect(i.end).toEqual({ status: 'interrupted', reason: 'host stopped' });
  });
});

describe('chunks and errors', () => {
  const ids = completionIds('run_9', 'helper', new Date(5_000));
  it('ids, finish reasons and usage', () => {
    expect(ids).toEqual({ id: 'chatcmpl-run_9', model: 'helper', created: 5 });
    expect(finishReason({ status: 'completed', reason: '' })).toBe('stop');
    expect(finishReason({ status: 'timed_out', reason: '' })).toBe('error');
    expect(openAIUsage({ status: 'completed', reason: '' })).toBeUndefined();
    expect(openAIUsage({ status: 'completed', reason: '', usage: { inputTokens: 3, outputTokens: 4 } })).toEqual({
      prompt_tokens: 3,
      completion_tokens: 4,
      total_tokens: 7,
    });
    expect(chunk(ids, { content: 'x' })).toMatchObject({
      object: 'chat.completion.chunk',
      choices: [{ index: 0, delta: { content: 'x' }, finish_reason: null }],
    });
    const whole = completion(ids, 'hi', { status: 'completed', reason: '', usage: { inputTokens: 1 } });
    expect(whole).toMatchObject({
      object: 'chat.completion',
      choices: [{ message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 1, completion_tokens: 0, total_tokens: 1 },
    });
  });

  it('a run that did not complete: status, code, no retry', () => {
    expect(outcomeError('failed', 'boom')).toMatchObject({ status: 502, headers: { 'x-should-retry': 'false' } });
    expect(outcomeError('timed_out', 'slow').status).toBe(504);
    expect(outcomeError('cancelled', 'by x').status).toBe(409);
    expect(outcomeError('interrupted', 'stop').status).toBe(503);
    expect(outcomeError('crashed', 'r'.repeat(5000)).body.error).toMatchObject({
      type: 'server_error',
      code: 'run_crashed',
    });
    expect(outcomeError('crashed', 'r'.repeat(5000)).message.length).toBeLessThan(600);
  });

  it('refusals keep their reasons; no_binding is model_not_found', () => {
    expect(refusalError('no_binding', 'm', 'gpt-x').body.error).toMatchObject({
      code: 'model_not_found',
      param: 'model',
    });
    expect(refusalError('no_binding', 'm', 'gpt-x').status).toBe(404);
    expect(refusalError('queue_full', 'full', 'b')).toMatchObject({ status: 429, headers: { 'retry-after': '1' } });
    expect(refusalError('session_paused', 'p', 'b').status).toBe(409);
    expect(refusalError('binding_disabled', 'off', 'b').body.error).toMatchObject({ code: 'binding_disabled' });
  });

  it('a problem+json body of the server becomes OpenAI’s shape', () => {
    expect(
      problemAsOpenAIError(
        { type: 'x', title: 'Unauthorized', status: 401, detail: 'token revoked', code: 'unauthorized' },
        401,
      ),
    ).toEqual({ error: { message: 'token revoked', type: 'authentication_error', param: null, code: 'unauthorized' } });
    expect(problemAsOpenAIError({ title: 'Bad', errors: [{ path: 'a', message: 'b' }] }, 400).error).toMatchObject({
      param: 'a',
      code: 'http_400',
    });
  });
});
