import { describe, expect, it } from 'vitest';
import { createHostLogger } from '../../../host/logging/logger.js';

/** A logger writing into an array, one entry per line. */
function captured(scrub?: (line: string) => string) {
  const lines: string[] = [];
  const log = createHostLogger('info', scrub, { write: (line: string) => void lines.push(line) });
  return { log, lines };
}

describe('the host logger', () => {
  it('writes no raw terminal control of logged text, and each line stays JSON with the same values', () => {
    const { log, lines } = captured();
    const hostile = [
      'esc \x1b[2J',
      'csi \u009b31m',
      'osc \u009d0;title\u0007',
      'del \x7f',
      'bidi \u202eevil\u202c',
      'isolate \u2066x\u2069',
      'bom \ufeff',
      'sep \u2028\u2029',
      'cr \rfake line',
      'nl \n{"level":30,"msg":"forged"}',
    ];
    for (const text of hostile) log.info({ runner: text, nested: { text } }, text);
    expect(lines).toHaveLength(hostile.length);
    lines.forEach((line, i) => {
      expect(line.endsWith('\n')).toBe(true);
      const body = line.slice(0, -1);
      // eslint-disable-next-line no-control-regex -- the controls are what the test looks for
      expect(body).not.toMatch(/[\x00-\x1f\x7f-\x9f\u061c\u200b\u200e\u200f\u2028-\u202e\u2066-\u2069\ufeff]/);
      const parsed = JSON.parse(body) as { msg: string; runner: string; nested: { text: string } };
      expect([parsed.msg, parsed.runner, parsed.nested.text]).toEqual([hostile[i], hostile[i], hostile[i]]);
    });
  });

  it('the scrubber sees the line first (a redacted value never reaches the destination)', () => {
    const { log, lines } = captured((line) => line.replaceAll('s3cr3t', '[redacted]'));
    log.info({ value: 'key s3cr3t\u009b' }, 'hello');
    expect(lines.join('')).not.toContain('s3cr3t');
    expect(JSON.parse(lines[0]!)).toMatchObject({ value: 'key [redacted]\u009b' });
  });

  it('redacts the fixed paths (authorization header, tokens, env)', () => {
    const { log, lines } = captured();
    log.info({ headers: { authorization: 'Bearer pdk_x' }, token: 't1', env: { A: 'b' }, call: { apiKey: 'k' } });
    const line = lines.join('');
    for (const secret of ['pdk_x', 't1', '"b"', '"k"']) expect(line).not.toContain(secret);
  });
});
