import { pino, type DestinationStream, type Logger } from 'pino';
import { terminalSafe } from '../util/terminalText.js';

/** Paths pino blanks in every host log line; constant on purpose, never from config or input. */
export const REDACT_PATHS = ['env', '*.env', 'headers.authorization', '*.apiKey', '*.token', 'token'] as const;

/**
 * The host logger, on fd 2 unless given a destination. `scrub` sees each serialized line before it is written: the
 * value redactor plugs in here (pino's own redaction matches paths only). Then the line is made safe for the
 * terminal an admin reads it on: JSON already escapes C0 controls, but C1 controls (U+009B is CSI), DEL and bidi
 * overrides in logged runner or client text would reach the terminal raw; they are written as `\uXXXX`, so the line
 * stays exact JSON with the same values.
 */
export function createHostLogger(
  level: string,
  scrub: (line: string) => string = (l) => l,
  destination: DestinationStream = pino.destination({ fd: 2, sync: true }),
): Logger {
  return pino(
    {
      name: 'paddock',
      level,
      redact: { paths: [...REDACT_PATHS], censor: '[redacted]' },
      hooks: { streamWrite: (line) => terminalSafe(scrub(line), true) },
    },
    destination,
  );
}
