import { pino, type Logger } from 'pino';

export type { Logger } from 'pino';

/**
 * A pino logger for runner code, writing to fd 2: stdout carries the protocol only. The host
 * captures stderr, caps and redacts it, and keeps its tail with the run outcome.
 * The level comes from `PADDOCK_LOG_LEVEL` (default `info`).
 */
export function createRunnerLogger(name: string): Logger {
  return pino(
    { name, level: process.env.PADDOCK_LOG_LEVEL ?? 'info', base: { runner: name } },
    pino.destination({ fd: 2, sync: true }),
  );
}
