// The abuse campaign's host: in this process, over a fresh data folder, with the `abuser` runner and small limits.
import { fileURLToPath } from 'node:url';
import { parseLimits } from '../../../host/config/limits.js';
import { configureContainer } from '../../../host/di/configure.js';
import { TOKENS } from '../../../host/di/tokens.js';
import type { Backend } from '../../../host/sandbox/backend.js';
import type { RunOutcome } from '../../../host/process/outcome.js';

/** Host limits: the abuser's manifest lowers them further (memory 256 MiB, 64 processes, 8 MiB stdout). */
const LIMITS = parseLimits({
  // A Node runner took more than the default 10 s to answer initialize under bwrap at load 30 (a shared machine).
  handshakeTimeoutMs: 30_000,
  wallClockMs: 40_000,
  idleMs: 10_000,
  cancelGraceMs: 1_000,
  shutdownGraceMs: 1_000,
  termGraceMs: 1_000,
  killConfirmMs: 5_000,
  memoryBytes: 512 * 1024 * 1024,
  pids: 128,
  diskBytes: 16 * 1024 * 1024,
  inodes: 1_000,
});

/** A host whose runners are the campaign's (`abuser`) and the built-in ones (`echo`, the normal neighbour). */
export function abuseHost(dataDir: string) {
  const container = configureContainer({
    dataDir,
    limits: LIMITS,
    runnerDirs: [fileURLToPath(new URL('./runners/', import.meta.url))],
    logLevel: 'silent',
    keepWorkspaces: false,
  });
  const runs = container.resolve(TOKENS.RunService);
  let events = 0;
  return {
    store: container.resolve(TOKENS.Store),
    gateway: container.resolve(TOKENS.Gateway),
    /** One run of `runner` with `config`; `onStarted` when the runner says its abuse started. */
    run(
      runner: string,
      backend: Backend,
      hooks: {
        config?: Record<string, unknown>;
        signal?: AbortSignal;
        onStarted?(): void;
        onIsolation?(enforced: string[]): void;
      } = {},
    ): Promise<RunOutcome> {
      events += 1;
      return runs.runAdHoc({
        runner,
        sandbox: backend,
        config: hooks.config,
        signal: hooks.signal,
        event: {
          id: `abuse-${process.pid}-${events}`,
          platform: 'abuse',
          bot: 'abuse',
          conversation: { type: 'private', id: `${runner}-${backend}` },
          sender: { id: 'u' },
          message: { parts: [{ type: 'text', text: 'hello' }] },
          receivedAt: new Date().toISOString(),
        },
        onStart: (info) => hooks.onIsolation?.(info.isolation.enforced),
        onUpdate: (update) => {
          if (update.kind === 'progress' && update.message === 'abuse started') hooks.onStarted?.();
        },
      });
    },
  };
}

/** What {@link abuseHost} returns. */
export type AbuseHost = ReturnType<typeof abuseHost>;
