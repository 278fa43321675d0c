import { describe, expect, it } from 'vitest';
import { terminalSafe } from '../../../host/util/terminalText.js';

describe('terminalSafe: runner text never drives the terminal', () => {
  it.each([
    ['clear screen and home', '\x1b[2J\x1b[H▶ run fake'],
    ['erase line and carriage return', '\x1b[2K\r✓ completed in 1 ms'],
    ['set the title (OSC 0, BEL)', '\x1b]0;pwned\x07'],
    ['C1 CSI', '\u009b31m'],
    ['backspace over text', 'ok\b\b\bFAIL'],
    ['DEL', 'a\x7fb'],
    ['line separator', 'a\u2028b'],
  ])('%s is shown, not acted on', (_name, text) => {
    const safe = terminalSafe(text, true);
    // eslint-disable-next-line no-control-regex -- the assertion is that no control character is left
    expect(safe).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]/);
    expect(safe.length).toBeGreaterThan(0);
  });

  it('keeps newlines and tabs in message text, escapes them in one-line status text', () => {
    expect(terminalSafe('a\n\tb', true)).toBe('a\n\tb');
    expect(terminalSafe('tool\n✓ completed')).toBe('tool\\n✓ completed');
    expect(terminalSafe('\x1b[31m')).toBe('\\x1b[31m');
    expect(terminalSafe('plain text, ünïcödé, emoji 🐎')).toBe('plain text, ünïcödé, emoji 🐎');
  });
});
