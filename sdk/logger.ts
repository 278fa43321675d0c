import { createRequire } from 'node:module';
import type { Logger, LoggerOptions } from 'pino';

export type { Logger } from 'pino';

type PinoModule = typeof import('pino');

/**
 * pino, loaded on first use (issue 16, a lighter runner start: its import is tens of ms of a runner's start, and a
 * runner that never logs never needs it). Bundled (a runner's entry, host/plugins/compileEntry.ts), `require` is the
 * bundle's and esbuild resolves `pino` to the host's copy as it does an `import`; unbundled ESM has no `require`, so
 * one is made for this file.
 */
function loadPino(): PinoModule {
  // A literal require('pino') call, so the bundler resolves it (confined like every import of the runner's build).
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (typeof require === 'function' ? require('pino') : createRequire(import.meta.url)('pino')) as PinoModule;
}

/**
 * A logger that creates its pino logger at its first use (any property: a level method, `level`, `flush`…); its
 * children are created the same way, so `child()` alone loads nothing.
 */
export function lazyLogger(create: () => Logger): Logger {
  let real: Logger | undefined;
  const get = () => (real ??= create());
  return new Proxy({} as Logger, {
    get(_target, key) {
      if (key === 'child')
        // (pino types a child with custom levels apart; this SDK's loggers have none.)
        return (...args: Parameters<Logger['child']>) => lazyLogger(() => get().child(...args) as unknown as Logger);
      const value: unknown = Reflect.get(get(), key);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(get()) : value;
    },
    set: (_target, key, value) => Reflect.set(get(), key, value),
    has: (_target, key) => Reflect.has(get(), key),
  });
}

/**
 * A pino logger for runner code, writing to fd 2: stdout carries the protocol only. The host
 * captures stderr, caps and redacts it, and keeps its tail with the run outcome.
 * The level comes from `PADDOCK_LOG_LEVEL` (default `info`). pino itself is loaded at the first log call.
 */
export function createRunnerLogger(name: string): Logger {
  return lazyLogger(() => {
    const { pino } = loadPino();
    const options: LoggerOptions = {
      name,
      level: process.env.PADDOCK_LOG_LEVEL ?? 'info',
      base: { runner: name },
    };
    return pino(options, pino.destination({ fd: 2, sync: true }));
  });
}
