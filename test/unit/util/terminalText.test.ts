import { describe, expect, it } from 'vitest';
import { terminalSafe } from '../../../host/util/terminalText.js';

// eslint-disable-next-line no-control-regex -- the assertion is that no control character is left
const UNSAFE = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b\u200e\u200f\u2028-\u202e\u2066-\u2069\ufeff]/;

describe('terminalSafe: runner text never drives the terminal', () => {
  it.each([
    ['clear screen and home', '\x1b[2J\x1b[H▶ run fake'],
    ['erase line and carriage return', '\x1b[2K\r✓ completed in 1 ms'],
    ['set the title (OSC 0, BEL)', '\x1b]0;pwned\x07'],
    ['C1 CSI', '\u009b31m'],
    ['backspace over text', 'ok\b\b\bFAIL'],
    ['DEL', 'a\x7fb'],
    ['line separator', 'a\u2028b'],
    ['C1 OSC title with C1 ST', '\u009d0;pwned\u009c'],
    ['right-to-left override (Trojan Source)', 'access \u202eevil\u202c'],
    ['isolates', '\u2066a\u2067b\u2068c\u2069'],
    ['invisible marks', '\u200e\u200f\u061c\u200b\ufeff'],
  ])('%s is shown, not acted on', (_name, text) => {
    const safe = terminalSafe(text, true);
    expect(safe).not.toMatch(UNSAFE);
    expect(safe.length).toBeGreaterThan(0);
  });

  it('keeps newlines and tabs in message text, escapes them in one-line status text', () => {
    expect(terminalSafe('a\n\tb', true)).toBe('a\n\tb');
    expect(terminalSafe('tool\n✓ completed')).toBe('tool\\n✓ completed');
    expect(terminalSafe('\x1b[31m')).toBe('\\x1b[31m');
    expect(terminalSafe('plain text, ünïcödé, emoji 🐎')).toBe('plain text, ünïcödé, emoji 🐎');
    // Joiners move nothing and scripts and emoji need them: kept.
    expect(terminalSafe('👩\u200d💻 \u0645\u200c\u06cc')).toBe('👩\u200d💻 \u0645\u200c\u06cc');
    expect(terminalSafe('\u009b2J \u202eevil')).toBe('\\u009b2J \\u202eevil');
  });

  it('JSON text through terminalSafe is still exact JSON: the same values once parsed, no raw control left', () => {
    const value = {
      'key\u009b': ['\u009b2J\u009d0;t\u009c', '\x7f', '\u202eevil\u202c \u2066x\u2069', '\\\u009b', '\x1b[31m\r\n'],
    };
    for (const text of [JSON.stringify(value), JSON.stringify(value, null, 2)]) {
      const safe = terminalSafe(text, true);
      expect(safe).not.toMatch(UNSAFE);
      expect(JSON.parse(safe)).toEqual(value);
    }
  });
});
