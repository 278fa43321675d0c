// What the gateway passes on to a model provider, redacted: body, query string and the passed-on headers, each
// telling that something was replaced (the run is then tainted). An outside attack got a secret past the first
// version in the query string and in anthropic-beta.
import { describe, expect, it } from 'vitest';
import { redactOutbound } from '../../../host/gateway/outboundRequest.js';
import { Redactor } from '../../../host/secrets/redactor.js';

const SECRET = 'canary-outbound-Xy7Qp2Lm9Wd4';
const redactor = new Redactor();
redactor.add(SECRET);
const pct = (text: string) => [...text].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('');

function send(parts: { body?: Record<string, unknown>; query?: string; clientHeaders?: Record<string, string> }) {
  let heard = 0;
  const out = redactOutbound(
    redactor,
    { body: parts.body ?? { model: 'm' }, query: parts.query ?? '', clientHeaders: parts.clientHeaders ?? {} },
    () => (heard += 1),
  );
  return { out, heard, text: JSON.stringify(out) };
}

describe('redactOutbound', () => {
  it('a clean request passes unchanged, the query string as written, and nothing is heard', () => {
    const { out, heard } = send({ query: '?beta=true&x=a%20b', clientHeaders: { 'anthropic-beta': 'tools-2024' } });
    expect(out).toEqual({
      body: { model: 'm' },
      query: '?beta=true&x=a%20b',
      clientHeaders: { 'anthropic-beta': 'tools-2024' },
    });
    expect(heard).toBe(0);
  });

  it('a secret anywhere is replaced, and heard once', () => {
    const cases: Parameters<typeof send>[0][] = [
      { body: { messages: [{ content: `read: ${SECRET}` }] } },
      { query: `?beta=true&k=${SECRET}` },
      { query: `?${pct(SECRET)}=1` },
      { query: `?k=${pct(SECRET)}` },
      { clientHeaders: { 'anthropic-beta': SECRET } },
      { clientHeaders: { 'anthropic-version': `2023-06-01,${SECRET}` } },
    ];
    for (const parts of cases) {
      const { text, heard, out } = send(parts);
      expect(text, JSON.stringify(parts)).not.toContain(SECRET);
      expect(decodeURIComponent(out.query)).not.toContain(SECRET);
      expect(heard, JSON.stringify(parts)).toBe(1);
    }
  });

  it('a secret spanning a key, its = and its value is caught in the rebuilt text', () => {
    const spanning = new Redactor();
    spanning.add('abcdefgh=ijklmnop');
    let heard = 0;
    const out = redactOutbound(
      spanning,
      { body: {}, query: '?abcdefgh=ijklmnop', clientHeaders: {} },
      () => (heard += 1),
    );
    expect(out.query).not.toContain('ijklmnop');
    expect(heard).toBe(1);
  });
});
