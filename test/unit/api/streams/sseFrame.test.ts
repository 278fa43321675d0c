import { describe, expect, it } from 'vitest';
import { oneLineJson, sseMessage, storedEventJson } from '../../../../host/api/streams/sseFrame.js';
import { MAX_START_SEQ, parseStartSeq } from '../../../../host/api/streams/startSeq.js';
import type { RawEvent } from '../../../../host/state/streamReads.js';
import { SseParser } from '../../../helpers/sse.js';

const raw = (over: Partial<RawEvent> = {}): RawEvent => ({
  id: 'evt_1',
  sessionId: 'ses_1',
  seq: 7,
  type: 'run.update',
  runId: 'run_1',
  at: '2026-12-01T00:00:00.000Z',
  dataJson: '{"runnerSeq":1,"update":{"kind":"message.delta","text":"hi"}}',
  ...over,
});

/** Hostile texts: every way to end a line or a message, and look-alikes of them. */
const HOSTILE = [
  '\n\ndata: forged\n\n',
  '\r\rdata: forged\r\r',
  '\r\n\r\nid: 999\r\nevent: run.ended\r\n\r\n',
  'a\u2028b\u2029c\u0085d',
  ': comment\nretry: 1\n',
  'tab\tnul\u0000bell\u0007',
  '\ud800 lone surrogate',
];

describe('SSE framing', () => {
  it('one stored event is one message of exactly id, event and data, for every hostile text', () => {
    for (const text of HOSTILE) {
      const data = { runnerSeq: 1, update: { kind: 'message.delta', text } };
      const frame = sseMessage(raw({ dataJson: JSON.stringify(data) }));
      const messages = new SseParser().feed(frame);
      expect(messages, JSON.stringify(text)).toHaveLength(1);
      expect(messages[0]!.fields).toEqual(['id', 'event', 'data']);
      expect(messages[0]!.id).toBe('7');
      expect(messages[0]!.event).toBe('run.update');
      expect(JSON.parse(messages[0]!.data)).toEqual({ ...JSON.parse(storedEventJson(raw())), data });
      expect(frame).not.toMatch(/[\u2028\u2029]/);
    }
  });

  it('stored JSON text with raw line ends between its tokens (valid JSON) still makes one data line', () => {
    const dataJson = '{\r\n "runnerSeq": 1,\r "update":\n{"kind":"message.delta","text":"x\\ny"}}';
    const messages = new SseParser().feed(sseMessage(raw({ dataJson })));
    expect(messages.map((m) => m.fields)).toEqual([['id', 'event', 'data']]);
    expect((JSON.parse(messages[0]!.data) as { data: unknown }).data).toEqual(JSON.parse(dataJson));
    expect(oneLineJson('"\u2028"')).toBe('"\\u2028"');
    expect(JSON.parse(oneLineJson('"\u2028\u2029"'))).toBe('\u2028\u2029');
  });

  it('an event type outside the store shape goes out as `message`, never as raw text', () => {
    const frame = sseMessage(raw({ type: 'run.update\ndata: forged' as never }));
    expect(new SseParser().feed(frame).map((m) => [m.event, m.fields])).toEqual([['message', ['id', 'event', 'data']]]);
    expect(() => sseMessage(raw({ seq: 0 }))).toThrow(/no valid seq/);
  });

  it('a huge line stays one message', () => {
    const text = 'x'.repeat(4 * 1024 * 1024);
    const frame = sseMessage(raw({ dataJson: JSON.stringify({ runnerSeq: 1, update: { text } }) }));
    const messages = new SseParser().feed(frame);
    expect(messages).toHaveLength(1);
    const event = JSON.parse(messages[0]!.data) as { data: { update: { text: string } } };
    expect(event.data.update.text).toHaveLength(text.length);
  });
});

describe('the test SSE parser (follows the WHATWG rules, so a framing bug cannot hide from it)', () => {
  it('ends lines at CR, LF and CRLF, across chunk boundaries, and splits a message at an empty line', () => {
    const p = new SseParser();
    const text = 'id: 1\revent: a\r\ndata: x\n\r: c\ndata:y\ndata\r\n\r\n';
    const out = [...text].flatMap((ch) => p.feed(ch)); // one character at a time: a CR then an LF in two chunks
    expect(out).toEqual([
      { id: '1', event: 'a', data: 'x', fields: ['id', 'event', 'data'] },
      { id: '1', event: 'message', data: 'y\n', fields: ['data', 'data'] },
    ]);
    expect(p.comments).toEqual([' c']);
    expect(new SseParser().feed('data: a\n\ndata: forged\n\n')).toHaveLength(2);
  });
});

describe('start seq (Last-Event-ID / ?after=)', () => {
  it('takes decimal digits up to 2^53; the header wins; none is 0', () => {
    expect(parseStartSeq({})).toEqual({ ok: true, afterSeq: 0 });
    expect(parseStartSeq({ after: '12' })).toEqual({ ok: true, afterSeq: 12 });
    expect(parseStartSeq({ lastEventId: '30', after: '12' })).toEqual({ ok: true, afterSeq: 30 });
    expect(parseStartSeq({ lastEventId: '0009' })).toEqual({ ok: true, afterSeq: 9 });
    expect(parseStartSeq({ after: String(MAX_START_SEQ) })).toEqual({ ok: true, afterSeq: 2 ** 53 });
    expect(parseStartSeq({ after: `000000000${MAX_START_SEQ}` })).toEqual({ ok: true, afterSeq: 2 ** 53 });
  });

  it('refuses everything else, naming each input at once', () => {
    const bad = ['', '-1', '1.5', '1e3', ' 1', '1 ', '0x10', '+1', '٣', '9007199254740993', '1'.repeat(400), '1, 2'];
    for (const value of bad) {
      const r = parseStartSeq({ lastEventId: value, after: value });
      expect(r.ok, JSON.stringify(value)).toBe(false);
      if (!r.ok) expect(r.errors.map((e) => e.path)).toEqual(['headers.last-event-id', 'query.after']);
    }
    expect(parseStartSeq({ after: ['1', '2'] })).toEqual({
      ok: false,
      errors: [{ path: 'query.after', message: 'must be given once, as decimal digits' }],
    });
    expect(parseStartSeq({ lastEventId: '5', after: 'x' })).toMatchObject({
      ok: false,
      errors: [{ path: 'query.after' }],
    });
    expect(parseStartSeq({ after: '9007199254740993' })).toEqual({
      ok: false,
      errors: [{ path: 'query.after', message: 'must be at most 9007199254740992' }],
    });
  });
});
