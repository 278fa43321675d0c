import { pino, type Logger } from 'pino';

/** Paths pino blanks in every host log line; constant on purpose, never from config or input. */
export const REDACT_PATHS = ['env', '*.env', 'headers.authorization', '*.apiKey', '*.token', 'token'] as const;

/**
 * The host logger, on fd 2. `scrub` sees each serialized line before it is written: the value
 * redactor plugs in here (pino's own redaction matches paths only).
 */
export function createHostLogger(level: string, scrub: (line: string) => string = (l) => l): Logger {
  return pino(
    {
      name: 'paddock',
      level,
      redact: { paths: [...REDACT_PATHS], censor: '[redacted]' },
      hooks: { streamWrite: scrub },
    },
    pino.destination({ fd: 2, sync: true }),
  );
}
