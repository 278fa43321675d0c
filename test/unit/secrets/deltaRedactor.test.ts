import { describe, expect, it } from 'vitest';
import { DeltaRedactor } from '../../../host/secrets/deltaRedactor.js';
import { REDACTED, Redactor } from '../../../host/secrets/redactor.js';
import type { Update } from '../../../sdk/protocol/types.js';

const SECRET = 'canary-delta-Pz6Jw2Rn';
const delta = (text: string, messageId?: string): Update => ({
  kind: 'message.delta',
  ...(messageId ? { messageId } : {}),
  text,
});
const texts = (updates: Update[], messageId?: string) =>
  updates
    .filter(
      (u): u is Extract<Update, { kind: 'message.delta' }> => u.kind === 'message.delta' && u.messageId === messageId,
    )
    .map((u) => u.text)
    .join('');

function setup() {
  const redactor = new Redactor();
  redactor.add(SECRET);
  return new DeltaRedactor(redactor);
}

describe('message deltas redacted as one stream per message', () => {
  it(
    'every split of the secret across two and three deltas: each delta and the concatenation are safe, one ' +
      'delta out per delta in',
    () => {
      const text = `say ${SECRET} done`;
      for (let a = 1; a < text.length; a++) {
        for (const b of [undefined, ...Array.from({ length: text.length - a - 1 }, (_, i) => a + 1 + i)]) {
          const d = setup();
          const cuts = [0, a, ...(b ? [b] : []), text.length];
          const out: Update[] = [];
          for (let i = 0; i + 1 < cuts.length; i++) {
            const got = d.update(delta(text.slice(cuts[i], cuts[i + 1]), 'm'));
            expect(got).toHaveLength(1);
            out.push(...got);
          }
          out.push(...d.end());
          for (const u of out) expect(JSON.stringify(u)).not.toContain(SECRET);
          expect(texts(out, 'm')).toBe(`say ${REDACTED} done`);
        }
      }
    },
  );

  it(
    'a message ends at a tool call, a message or an artifact (its tail goes out first), not at log, progress or ' +
      'usage',
    () => {
      const d = setup();
      expect(d.update(delta(`a ${SECRET.slice(0, 5)}`, 'm'))).toEqual([delta('', 'm')]);
      const log: Update = { kind: 'log', level: 'info', message: 'x' };
      expect(d.update(log)).toEqual([log]);
      expect(d.update(delta(`${SECRET.slice(5)} b`, 'm'))).toEqual([delta('', 'm')]);
      const tool: Update = { kind: 'tool.started', toolCallId: 't', name: 'n' };
      expect(d.update(tool)).toEqual([delta(`a ${REDACTED} b`, 'm'), tool]);
      expect(d.end()).toEqual([]);
    },
  );

  it('interleaved messages keep their own streams; the end flushes each', () => {
    const d = setup();
    const out = [
      ...d.update(delta(SECRET.slice(0, 9), 'm1')),
      ...d.update(delta('other ', 'm2')),
      ...d.update(delta(SECRET.slice(9), 'm1')),
      ...d.update(delta('text', 'm2')),
      ...d.end(),
    ];
    expect(texts(out, 'm1')).toBe(REDACTED);
    expect(texts(out, 'm2')).toBe('other text');
    expect(JSON.stringify(out)).not.toContain(SECRET);
  });
});
