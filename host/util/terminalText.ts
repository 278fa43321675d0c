// Control and invisible formatting characters a terminal (or a reader) would act on instead of showing: C0 (ESC,
// CR, BS…), DEL, the 8-bit C1 controls (U+009B CSI, U+009D OSC…), the line/paragraph separators, and the Unicode
// bidi controls and invisible marks (U+061C, U+200B, U+200E/F, U+202A–U+202E, U+2066–U+2069, U+FEFF) that reorder
// or hide what an admin reads (Trojan Source). ZWJ/ZWNJ stay: scripts and emoji need them and they move nothing.
const INVISIBLE = '\\u061c\\u200b\\u200e\\u200f\\u2028-\\u202e\\u2066-\\u2069\\ufeff';
const UNSAFE_ONE_LINE = new RegExp(`[\\x00-\\x1f\\x7f-\\x9f${INVISIBLE}]`, 'g');
const UNSAFE_MULTILINE = new RegExp(`[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f${INVISIBLE}]`, 'g');

/** The visible escape of one unsafe character: `\r`, `\n`, `\t`, `\x1b` for C0, `\u009b` from DEL up. */
function escapeChar(c: string): string {
  if (c === '\r') return '\\r';
  if (c === '\n') return '\\n';
  if (c === '\t') return '\\t';
  const code = c.charCodeAt(0);
  // From DEL up the escape is `\uXXXX`, which is also a JSON escape: JSON text passed through terminalSafe stays
  // exact JSON (JSON.stringify escapes C0 itself, so only these can reach it raw).
  return code < 0x7f ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

/**
 * Untrusted text made safe for a terminal: every control character a runner or package could use to move the
 * cursor, clear the screen, set the title, fake a line of the host's own output or reorder what is shown (ESC, CSI,
 * OSC, CR, backspace, C1 controls, DEL, bidi overrides…) is shown as a visible escape (`\x1b`, `\r`, `\u009b`,
 * `\u202e`) instead of acting. `multiline` keeps newlines and tabs (message text); otherwise they are escaped too, so
 * untrusted text can never start a line of its own in the host's status lines. Applied to JSON text it keeps it
 * exact JSON (the same values once parsed).
 */
export function terminalSafe(text: string, multiline = false): string {
  return text.replace(multiline ? UNSAFE_MULTILINE : UNSAFE_ONE_LINE, escapeChar);
}
