// `paddock serve` as a child process for the HTTP API tests: started on a free loopback port, ready when it prints
// its URL (never a sleep), with its stderr kept for assertions.
import { execa, type ResultPromise } from 'execa';
import { repoPath } from './fixtures.js';

/** How long stop() lets a server drain its runs before asking it to cancel them. */
const STOP_GRACE_MS = 3_000;

/** A running `paddock serve`. */
export interface ServeChild {
  url: string;
  child: ResultPromise;
  /** Everything it wrote on stderr so far. */
  stderr(): string;
  /** Resolves when its stderr has matched `pattern`. */
  waitFor(pattern: RegExp): Promise<void>;
  /**
   * SIGTERM it and wait for its exit code; if it is still draining runs after {@link STOP_GRACE_MS}, a second SIGTERM
   * (it cancels them at once, as a second Ctrl-C does). Never SIGKILL: a killed server leaves its runs' quota mounts
   * and loop devices behind (only a later start on the same data folder would sweep them).
   */
  stop(): Promise<number | undefined>;
}

/**
 * Start `paddock serve --listen 127.0.0.1:0 …extra` on `dataDir`; under `wrap` (a command and its arguments, e.g.
 * `unshare --pid --fork --mount-proc`) when given, whose stop signals go to the whole process group: a wrapper such
 * as `unshare --fork` does not pass them on.
 */
export async function startServe(
  dataDir: string,
  extra: string[] = [],
  env: Record<string, string> = {},
  options: { wrap?: string[] } = {},
): Promise<ServeChild> {
  const command = [...(options.wrap ?? []), process.execPath];
  const args = [...command.slice(1), repoPath('bin/paddock.js'), 'serve', '--listen', '127.0.0.1:0', ...extra];
  const child = execa(command[0]!, args, {
    reject: false,
    cwd: repoPath('.'),
    env: { PADDOCK_HOME: dataDir, NO_COLOR: '1', ...env },
    // stop() escalates with a second SIGTERM, not execa's SIGKILL after 5 s.
    forceKillAfterDelay: false,
    // Its own process group, as a service manager starts it: a test can signal the whole group (`-pid`).
    detached: true,
  });
  let text = '';
  const waiters: { pattern: RegExp; resolve: () => void }[] = [];
  child.stderr!.on('data', (chunk: Buffer) => {
    text += chunk.toString();
    for (const w of waiters.filter((x) => x.pattern.test(text))) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve();
    }
  });
  const waitFor = (pattern: RegExp) =>
    new Promise<void>((resolve, reject) => {
      if (pattern.test(text)) return resolve();
      waiters.push({ pattern, resolve });
      void child.then((r) => reject(new Error(`paddock serve exited ${r.exitCode} before ${pattern}:\n${text}`)));
    });
  await waitFor(/listening on http:\/\/\S+/);
  const url = /listening on (http:\/\/\S+)/.exec(text)![1]!;
  return {
    url,
    child,
    stderr: () => text,
    waitFor,
    async stop() {
      const term = () => {
        if (!options.wrap) return child.kill('SIGTERM');
        try {
          process.kill(-child.pid!, 'SIGTERM');
        } catch {
          // The group is gone already.
        }
      };
      term();
      const again = setTimeout(term, STOP_GRACE_MS);
      try {
        return (await child).exitCode;
      } finally {
        clearTimeout(again);
      }
    },
  };
}

/**
 * Stop `hosts` one after another (those never started are skipped), then run `teardown` whatever happened — a
 * cluster left running by a failed stop would outlive the test run — and return their exit codes in order.
 */
export async function stopHostsThen(
  hosts: (ServeChild | undefined)[],
  teardown: () => void,
): Promise<(number | undefined)[]> {
  const codes: (number | undefined)[] = [];
  try {
    for (const host of hosts) if (host) codes.push(await host.stop());
  } finally {
    teardown();
  }
  return codes;
}
