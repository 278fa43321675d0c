// A real `paddock serve` child for the example clients' tests, with bindings to the says-on-cue fixture runner:
// each run connects to the test's Unix socket and says one assistant message per line the test writes, so a test
// acts between two updates of a live run (cut a stream, watch a chat message being edited) with no timing guess.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { paddock } from './cli.js';
import { FIXTURE_RUNNERS } from './host.js';
import { startServe, type ServeChild } from './serve.js';

/** One run of the says-on-cue runner, as it connected. */
export interface CuedRun {
  runId: string;
  /** The text of the message that started it. */
  text: string;
  /** Make the run say `line` as one assistant message. */
  say(line: string): void;
  /** Make it complete. */
  end(): void;
}

/** The test's end of the runs' socket. */
export interface Cues {
  path: string;
  /** Every run that connected, in order. */
  runs: CuedRun[];
  /** The next run to connect (after those already taken by earlier calls). */
  next(): Promise<CuedRun>;
  close(): void;
}

/** Listen on a Unix socket in `dir` for says-on-cue runs. */
export function cues(dir: string): Cues {
  const path = join(dir, 'cue.sock');
  const runs: CuedRun[] = [];
  const sockets: Socket[] = [];
  const waiting: ((run: CuedRun) => void)[] = [];
  let taken = 0;
  const server = createServer((socket) => {
    sockets.push(socket);
    socket.on('error', () => undefined);
    let text = '';
    const onData = (chunk: Buffer) => {
      text += chunk.toString();
      const nl = text.indexOf('\n');
      if (nl === -1) return;
      socket.off('data', onData);
      const first = text.slice(0, nl);
      const space = first.indexOf(' ');
      const run: CuedRun = {
        runId: first.slice(0, space),
        text: first.slice(space + 1),
        say: (line) => socket.write(`${line}\n`),
        end: () => socket.write('end\n'),
      };
      runs.push(run);
      if (waiting.length > 0) {
        taken++;
        waiting.shift()!(run);
      }
    };
    socket.on('data', onData);
  }).listen(path);
  return {
    path,
    runs,
    next: () =>
      new Promise((resolve) => {
        if (taken < runs.length) resolve(runs[taken++]!);
        else waiting.push(resolve);
      }),
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

/** A served data folder: the server, the cue socket, and tokens made with `paddock tokens create`. */
export interface CuedServe {
  home: string;
  server: ServeChild;
  cues: Cues;
  token(tenant: string, role: string): Promise<string>;
  stop(): Promise<number | undefined>;
}

/**
 * `paddock serve` on a new data folder whose bindings route platform `telegram`, bot `<id>` to says-on-cue, for
 * each `{ id, maxQueued? }` given (binding id = bot id).
 */
export async function cuedServe(bots: { id: string; maxQueued?: number }[]): Promise<CuedServe> {
  const home = mkdtempSync(join(tmpdir(), 'paddock-examples-'));
  const c = cues(home);
  const env = { PADDOCK_RUNNER_DIRS: FIXTURE_RUNNERS };
  const yaml = ['bindings:'].concat(
    bots.map(
      (b) =>
        `  - { id: ${b.id}, runner: says-on-cue, sandbox: process, config: { socket: ${JSON.stringify(c.path)} }, ` +
        `route: { platform: telegram, bot: ${b.id} }` +
        `${b.maxQueued !== undefined ? `, limits: { maxQueued: ${b.maxQueued} }` : ''} }`,
    ),
  );
  writeFileSync(join(home, 'paddock.yaml'), `${yaml.join('\n')}\n`);
  const applied = await paddock(['apply', '-f', join(home, 'paddock.yaml')], { dataDir: home, env });
  if (applied.exitCode !== 0) throw new Error(`paddock apply failed:\n${applied.stderr}`);
  const server = await startServe(home, ['--rate', '1000', '--burst', '1000'], env);
  return {
    home,
    server,
    cues: c,
    async token(tenant, role) {
      const r = await paddock(['tokens', 'create', '--tenant', tenant, '--role', role], { dataDir: home });
      if (r.exitCode !== 0) throw new Error(`paddock tokens create failed:\n${r.stderr}`);
      return r.stdout.trim();
    },
    async stop() {
      for (const run of c.runs) run.end(); // a run a failed test left waiting lets the server drain at once
      c.close();
      return server.stop();
    },
  };
}
