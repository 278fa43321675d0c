import { describe, expect, it } from 'vitest';
import { OpenAIHttpError } from '../../../../host/api/openai/errors.js';
import { parseChatRequest, type ChatRequest } from '../../../../host/api/openai/request.js';

const NOW = () => new Date('2026-12-01T00:00:00.000Z');
const ok = (body: unknown, headers = {}) => {
  const r = parseChatRequest(body, headers, NOW);
  if (r instanceof OpenAIHttpError) throw new Error(r.message);
  return r as ChatRequest;
};
const fail = (body: unknown, headers = {}) => {
  const r = parseChatRequest(body, headers, NOW);
  if (!(r instanceof OpenAIHttpError)) throw new Error('expected a refusal');
  return r;
};
const user = (content: unknown) => ({ model: 'm', messages: [{ role: 'user', content }] });

describe('parseChatRequest', () => {
  it('takes the last user message as the event, platform openai, bot = model', () => {
    const r = ok({
      model: 'helper',
      messages: [
        { role: 'user', content: 'first' },
        { role: 'assistant', content: 'ok' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'a' },
            { type: 'text', text: 'b' },
          ],
        },
        { role: 'assistant', content: null },
      ],
      temperature: 0.2,
      tools: [{ type: 'function', function: { name: 'ignored' } }],
    });
    expect(r.stream).toBe(false);
    expect(r.event).toMatchObject({
      type: 'message',
      platform: 'openai',
      bot: 'helper',
      conversation: { type: 'private' },
      sender: { id: 'openai-client' },
      message: { parts: [{ type: 'text', text: 'a\nb' }] },
      receivedAt: '2026-12-01T00:00:00.000Z',
    });
  });

  it('conversation: the header wins over `user`; neither gives a new one per request; event id from its header', () => {
    const body = { ...user('hi'), user: 'alice' };
    expect(ok(body, { 'x-paddock-conversation': 'c-1' }).event.conversation.id).toBe('c-1');
    expect(ok(body).event.conversation.id).toBe('alice');
    expect(ok(body).event.sender.id).toBe('alice');
    const a = ok(user('hi')).event;
    const b = ok(user('hi')).event;
    expect(a.conversation.id).not.toBe(b.conversation.id);
    expect(a.id).not.toBe(b.id);
    expect(ok(user('hi'), { 'x-paddock-event-id': 'e-9' }).event.id).toBe('e-9');
  });

  it('stream and include_usage', () => {
    expect(ok({ ...user('x'), stream: true, stream_options: { include_usage: true } })).toMatchObject({
      stream: true,
      includeUsage: true,
    });
    expect(ok({ ...user('x'), stream: null, stream_options: null })).toMatchObject({
      stream: false,
      includeUsage: false,
    });
  });

  it('names every problem at once, in OpenAI’s shape', () => {
    const e = fail({ model: '', messages: [], stream: 'yes', user: 5, n: 3 }, { 'x-paddock-event-id': '' });
    expect(e.status).toBe(400);
    expect(e.body.error.type).toBe('invalid_request_error');
    expect(e.body.error.errors!.map((p) => p.path).sort()).toEqual(
      ['header x-paddock-event-id', 'messages', 'model', 'n', 'stream', 'user'].sort(),
    );
    expect(e.body.error.param).toBe('header x-paddock-event-id');
    expect(fail(null).body.error.errors![0]!.path).toBe('body');
    expect(fail('text').status).toBe(400);
  });

  it('refuses non-text parts of the last user message, naming each', () => {
    const e = fail(
      user([
        { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
        { type: 'text', text: 'what?' },
        { type: 'input_audio', input_audio: {} },
        { type: 'text', text: 42 },
      ]),
    );
    expect(e.body.error.errors!.map((p) => p.path)).toEqual([
      'messages[0].content[0].type',
      'messages[0].content[2].type',
      'messages[0].content[3].text',
    ]);
    expect(e.message).toContain('only text content parts are supported (got "image_url")');
  });

  it('earlier messages are not checked (they are not sent); the last user one must have text', () => {
    const r = ok({
      model: 'm',
      messages: [
        { role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] },
        { role: 'user', content: 'now' },
      ],
    });
    expect(r.event.message.parts).toEqual([{ type: 'text', text: 'now' }]);
    for (const content of ['', '   ', [], [{ type: 'text', text: ' ' }], null, undefined])
      expect(fail(user(content)).body.error.param).toBe('messages[0].content');
    expect(fail({ model: 'm', messages: [{ role: 'system', content: 'x' }] }).body.error.param).toBe('messages');
  });

  it('bounds ids and refuses a repeated header', () => {
    expect(fail({ ...user('x'), model: 'm'.repeat(257) }).body.error.param).toBe('model');
    expect(fail(user('x'), { 'x-paddock-conversation': ['a', 'b'] }).body.error.errors![0]).toEqual({
      path: 'header x-paddock-conversation',
      message: 'given more than once',
    });
    // An echoed bad part type is clipped.
    expect(fail(user([{ type: 't'.repeat(5000) }])).message.length).toBeLessThan(300);
  });
});
