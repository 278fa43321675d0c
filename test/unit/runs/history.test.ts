import { describe, expect, it } from 'vitest';
import { sessionHistory } from '../../../host/runs/history.js';
import type { StoredEvent } from '../../../host/state/events.js';

let seq = 0;
const ev = (type: string, runId: string | null, data: unknown): StoredEvent => ({
  id: `e${++seq}`,
  sessionId: 's',
  seq,
  type: type as StoredEvent['type'],
  runId,
  at: `t${seq}`,
  data: data as StoredEvent['data'],
});
const msg = (text: string) => ev('message.received', null, { event: { message: { parts: [{ type: 'text', text }] } } });
const queued = (runId: string, goalRevision = 0) => ev('run.queued', runId, { runner: 'x', goalRevision, attempt: 1 });
const ended = (runId: string, status: string, text?: string) =>
  ev('run.ended', runId, {
    status,
    reason: '',
    ...(text ? { result: { status: 'completed', output: { parts: [{ type: 'text', text }] } } } : {}),
    exitCode: 0,
    signal: null,
  });
const view = (h: { role: string; text: string }[]) => h.map((m) => `${m.role}:${m.text}`);
const same = (t: string) => t;

describe('sessionHistory (the history grant window)', () => {
  // m1 → r1 answered; m2 → r2 queued while r1 ran, r1 ends after r2 was queued; m3 → r3 (the run
  // being started) and m4 → r4 queued behind it.
  seq = 0;
  const events = [
    msg('m1'),
    queued('r1'),
    msg('m2'),
    queued('r2'),
    ended('r1', 'completed', 'a1'),
    ended('r2', 'failed'),
    msg('m3'),
    queued('r3'),
    msg('m4'),
    queued('r4'),
  ];

  it(
    'earlier turns only, in conversation order: an answer that ended late still follows its question; failed ' +
      'runs have no answer; own and later messages are left out',
    () => {
      expect(view(sessionHistory(events, 'r3', { messages: 100 }, same))).toEqual([
        'user:m1',
        'assistant:a1',
        'user:m2',
      ]);
      expect(view(sessionHistory(events, 'r2', { messages: 100 }, same))).toEqual(['user:m1', 'assistant:a1']);
      expect(view(sessionHistory(events, 'r1', { messages: 100 }, same))).toEqual([]);
    },
  );

  it('none gives nothing; a message window keeps the newest; a token window keeps whole messages that fit', () => {
    expect(sessionHistory(events, 'r3', 'none', same)).toEqual([]);
    expect(view(sessionHistory(events, 'r3', { messages: 2 }, same))).toEqual(['assistant:a1', 'user:m2']);
    // Each text is 2 characters = 1 token.
    expect(view(sessionHistory(events, 'r3', { tokens: 2 }, same))).toEqual(['assistant:a1', 'user:m2']);
    expect(view(sessionHistory(events, 'r3', { tokens: 2, messages: 1 }, same))).toEqual(['user:m2']);
  });

  it('every text passes the redactor, and its size after redaction is what the token window counts', () => {
    const redacted = sessionHistory(events, 'r3', { tokens: 100 }, (t) => t.replace('m', '[REDACTED]'));
    expect(view(redacted)).toEqual(['user:[REDACTED]1', 'assistant:a1', 'user:[REDACTED]2']);
    expect(redacted[0]!.at).toBe('t1');
  });

  it('an unknown run gets nothing', () => {
    expect(sessionHistory(events, 'r9', { messages: 5 }, same)).toEqual([]);
  });

  it('steering: an answer of an older goal revision that ended after a newer one was queued is never fed to it', () => {
    seq = 0;
    // m1 → r1 (revision 0) answered in time; m2 → r2 (revision 0) still running when m3 changes the goal: r3 is
    // queued under revision 1, r2 completes late; m4 → r4 (revision 1).
    const steered = [
      msg('m1'),
      queued('r1'),
      ended('r1', 'completed', 'a1'),
      msg('m2'),
      queued('r2'),
      msg('m3'),
      queued('r3', 1),
      ended('r2', 'completed', 'late answer'),
      ended('r3', 'completed', 'a3'),
      msg('m4'),
      queued('r4', 1),
    ];
    const r4 = view(sessionHistory(steered, 'r4', { messages: 100 }, same));
    expect(r4).toEqual(['user:m1', 'assistant:a1', 'user:m2', 'user:m3', 'assistant:a3']);
    expect(r4.join()).not.toContain('late answer');
    // Had r2 ended before the goal changed, its answer would be history like any other.
    seq = 0;
    const inTime = [msg('m2'), queued('r2'), ended('r2', 'completed', 'a2'), msg('m3'), queued('r3', 1)];
    expect(view(sessionHistory(inTime, 'r3', { messages: 100 }, same))).toEqual(['user:m2', 'assistant:a2']);
  });

  it("steering append: a message appended to a running run is history, and that run's answer follows it", () => {
    seq = 0;
    const appended = (text: string, runId: string) =>
      ev('message.received', runId, {
        event: { message: { parts: [{ type: 'text', text }] } },
        appended: { goalRevision: 0 },
      });
    const events2 = [
      msg('m1'),
      queued('r1'),
      appended('also m1b', 'r1'),
      ended('r1', 'completed', 'a1 after both'),
      msg('m2'),
      queued('r2'),
    ];
    expect(view(sessionHistory(events2, 'r2', { messages: 100 }, same))).toEqual([
      'user:m1',
      'user:also m1b',
      'assistant:a1 after both',
    ]);
  });
});
