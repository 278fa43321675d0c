/**
 * Runner text made safe for a terminal: every control character a runner could use to move the
 * cursor, clear the screen, set the title or fake a line of the host's own output (ESC, CSI, OSC,
 * CR, backspace, C1 controls, DEL…) is shown as a visible escape (`\x1b`, `\r`, `\u009b`) instead
 * of acting. `multiline` keeps newlines and tabs (message text); otherwise they are escaped too, so
 * a runner string can never start a line of its own in the host's status lines.
 */
export function terminalSafe(text: string, multiline = false): string {
  return text.replace(
    // eslint-disable-next-line no-control-regex -- matching control characters is this function's job
    multiline ? /[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]/g : /[\x00-\x1f\x7f-\x9f\u2028\u2029]/g,
    (c) => {
      const code = c.charCodeAt(0);
      if (c === '\r') return '\\r';
      if (c === '\n') return '\\n';
      if (c === '\t') return '\\t';
      return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
    },
  );
}
