// `paddock serve` as a child process for the HTTP benchmarks: the built command (bin/paddock.js → dist/) on a free
// loopback port of a data folder, ready when it prints its URL.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The paddock package run: this one, or PADDOCK_BENCH_ROOT (another built folder, for before/after figures). */
const ROOT = process.env.PADDOCK_BENCH_ROOT ?? fileURLToPath(new URL('../', import.meta.url));

/** A running `paddock serve`: its base URL and how to stop it. */
export interface BenchServe {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Start `paddock serve --listen 127.0.0.1:0 …extra` on `dataDir` (`npm run build` first: it runs dist/). */
export async function startBenchServe(dataDir: string, extra: string[], env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [join(ROOT, 'bin/paddock.js'), 'serve', '--listen', '127.0.0.1:0', ...extra], {
    cwd: ROOT,
    env: { ...process.env, PADDOCK_HOME: dataDir, PADDOCK_LOG_LEVEL: 'warn', NO_COLOR: '1', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let text = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const m = /listening on (http:\/\/\S+)/.exec(text);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`paddock serve exited ${code}:\n${text}`)));
  });
  return {
    url,
    child,
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  } satisfies BenchServe;
}
