import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { REDACTED, Redactor } from '../../../host/secrets/redactor.js';
import { sseRedactor } from '../../../host/gateway/wire/sseRedactor.js';
import { WIRES, type NormalizedReply, type WireFormat } from '../../../host/gateway/wire/index.js';

const SECRET = 'canary-sse-Wq3nX8vT5kLp';

describe('SSE answers are redacted event by event', () => {
  it(
    'property: in every wire, a secret split across text deltas at any point, and in tool arguments, is caught; ' +
      'the harness assembles the redacted answer',
    () => {
      const redactor = new Redactor();
      redactor.add(SECRET);
      fc.assert(
        fc.property(
          fc.constantFrom<WireFormat>('anthropic', 'chat', 'responses'),
          fc.string({ maxLength: 300 }).filter((s) => !s.includes('canary')),
          fc.integer({ min: 1, max: 60 }),
          fc.array(fc.integer({ min: 1, max: 200 }), { maxLength: 40 }),
          (format, before, pieces, cuts) => {
            const text = `${before}${SECRET} and base64 ${Buffer.from(`KEY=${SECRET}`).toString('base64')} end`;
            const reply: NormalizedReply = {
              id: 'msg_1',
              model: 'm',
              content: [
                { type: 'text', text },
                { type: 'tool_use', id: 'call_1', name: 'bash', input: { command: `echo ${SECRET}` } },
              ],
              stopReason: 'tool_use',
              usage: { inputTokens: 1, outputTokens: 2 },
            };
            const raw = WIRES[format].render(reply, true, pieces).join('');
            const redact = sseRedactor(redactor);
            let out = '';
            let at = 0;
            for (const n of cuts) {
              out += redact.push(raw.slice(at, at + n));
              at += n;
            }
            out += redact.push(raw.slice(at)) + redact.end();
            expect(out).not.toContain(SECRET);
            const assembler = WIRES[format].assembler(true);
            assembler.push(out);
            const got = assembler.result();
            expect(JSON.stringify(got)).not.toContain(SECRET);
            const gotText = got.content
              .filter((b) => b.type === 'text')
              .map((b) => (b as { text: string }).text)
              .join('');
            expect(gotText.startsWith(`${before}${REDACTED} and base64 S0VZPW${REDACTED}`)).toBe(true);
            expect(got.content.find((b) => b.type === 'tool_use')).toMatchObject({
              name: 'bash',
              input: { command: `echo ${REDACTED}` },
            });
            expect(got.usage).toEqual({ inputTokens: 1, outputTokens: 2 });
          },
        ),
        { numRuns: 100 },
      );
    },
    120_000,
  );

  it('non-JSON events and other fields are redacted too, and the stream ends cleanly', () => {
    const redactor = new Redactor();
    redactor.add(SECRET);
    const redact = sseRedactor(redactor);
    const out =
      redact.push(
        `event: error\ndata: {"type":"error","error":{"message":"bad key ${SECRET}"}}\n\ndata: raw ${SECRET}\n\n`,
      ) + redact.end();
    expect(out).toBe(
      `event: error\ndata: {"type":"error","error":{"message":"bad key ${REDACTED}"}}\n\ndata: raw ${REDACTED}\n\n`,
    );
  });
});
