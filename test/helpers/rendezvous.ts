// The rendezvous socket of the `waits-for-go` fixture runner: each run connects, sends "<runId> <text>", and finishes
// only when the test writes "go" — so a test holds a run open for exactly as long as it needs, with no sleep.
import { createServer, type Socket } from 'node:net';
import { join } from 'node:path';

/** Listen on `<dir>/rv.sock` (the path goes into the binding's config as `socket`). */
export function rendezvous(dir: string) {
  const path = join(dir, 'rv.sock');
  const sockets = new Map<string, Socket>();
  const waiting = new Map<string, () => void>();
  const server = createServer((s) => {
    s.on('error', () => undefined);
    s.once('data', (chunk) => {
      const runId = chunk.toString().split(' ')[0]!;
      sockets.set(runId, s);
      waiting.get(runId)?.();
    });
  }).listen(path);
  return {
    path,
    /** Resolves once run `runId` is running and connected. */
    arrived: (runId: string) =>
      new Promise<void>((resolve) => (sockets.has(runId) ? resolve() : waiting.set(runId, resolve))),
    /** Whether run `runId` has connected (it is running). */
    has: (runId: string) => sockets.has(runId),
    go: (runId: string) => sockets.get(runId)!.write('go\n'),
    close: () => {
      for (const s of sockets.values()) s.destroy();
      server.close();
    },
  };
}
