// The fuzzing runner's brain: a Unix socket the runner process (`socat STDIO UNIX-CONNECT:…`) connects to, which
// plays one case per connection. One player per lane, one case at a time; the host sees an ordinary runner process.
import { createServer, type Server, type Socket } from 'node:net';
import { fillPlaceholder, NEXT_SEQ, REQUEST_ID, RUN_ID, type Chunk } from './chunk.js';
import type { FuzzCase } from './cases.js';

/** The runner command for a player listening on `socketPath`: a socat bridge, which exits soon after either end. */
export function bridgeCommand(socketPath: string): { command: string; args: string[] } {
  return { command: '/usr/bin/socat', args: ['-t', '0.05', 'STDIO', `UNIX-CONNECT:${socketPath}`] };
}

/** What the player saw of the host during one case. */
export interface PlayLog {
  /** Methods of the host's requests and notifications, in order. */
  hostMethods: string[];
  /** Answers the host sent to the runner's requests. */
  answers: number;
  /** Lines from the host that were not JSON (the host must only ever send protocol messages). */
  badHostLines: string[];
}

/** Listens on one socket; {@link FuzzPlayer.arm} sets the case the next connection plays. */
export class FuzzPlayer {
  private server: Server;
  private current: { fuzz: FuzzCase; log: PlayLog } | undefined;

  constructor(readonly socketPath: string) {
    this.server = createServer((socket) => this.connected(socket));
  }

  /** Start listening. */
  listen(): Promise<void> {
    return new Promise((resolve) => this.server.listen(this.socketPath, resolve));
  }

  /** The next connection plays `fuzz`; returns the log it fills. */
  arm(fuzz: FuzzCase): PlayLog {
    const log: PlayLog = { hostMethods: [], answers: 0, badHostLines: [] };
    this.current = { fuzz, log };
    return log;
  }

  /** Stop listening (connections still open are destroyed). */
  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private connected(socket: Socket): void {
    const armed = this.current;
    this.current = undefined;
    socket.on('error', () => undefined);
    if (!armed) return void socket.destroy();
    new Play(socket, armed.fuzz, armed.log).start();
  }
}

/** One case on one connection. */
class Play {
  private seq = 0;
  private runId = 'run_not_started';
  private pending = '';
  /** Writes go out in order, one after another. */
  private queue: Promise<void> = Promise.resolve();

  constructor(
    private readonly socket: Socket,
    private readonly fuzz: FuzzCase,
    private readonly log: PlayLog,
  ) {}

  start(): void {
    this.socket.on('data', (data: Buffer) => this.read(data));
    this.send(this.fuzz.early, undefined);
  }

  private read(data: Buffer): void {
    this.pending += data.toString('utf8');
    for (let nl = this.pending.indexOf('\n'); nl >= 0; nl = this.pending.indexOf('\n')) {
      const text = this.pending.slice(0, nl);
      this.pending = this.pending.slice(nl + 1);
      if (!text) continue;
      let msg: { id?: unknown; method?: string; params?: unknown };
      try {
        msg = JSON.parse(text) as typeof msg;
      } catch {
        this.log.badHostLines.push(text.slice(0, 200));
        continue;
      }
      this.onMessage(msg);
    }
  }

  private onMessage(msg: { id?: unknown; method?: string; params?: unknown }): void {
    if (!msg.method) {
      this.log.answers += 1;
      return;
    }
    this.log.hostMethods.push(msg.method);
    const { fuzz } = this;
    switch (msg.method) {
      case 'initialize':
        if (fuzz.handshake === 'close') return this.then(() => void this.socket.destroy());
        if (fuzz.handshake === 'silent') return;
        if (fuzz.handshake === 'badAnswer') return this.send([fuzz.initAnswer!], msg.id);
        return this.send([INIT_ANSWER], msg.id);
      case 'run':
        this.runId = (msg.params as { run: { runId: string } }).run.runId;
        this.send(fuzz.body, msg.id);
        this.send(fuzz.endChunks, msg.id);
        if (fuzz.ending === 'close' || fuzz.ending === 'partialClose') this.then(() => void this.socket.destroy());
        return;
      case 'shutdown':
        this.send([SHUTDOWN_ANSWER], msg.id);
        return this.then(() => void this.socket.end());
      default:
        return;
    }
  }

  /** Queue `chunks` (placeholders filled when written: the run id may arrive in between). */
  private send(chunks: readonly Chunk[], requestId: unknown): void {
    for (const chunk of chunks) this.then(() => this.write(chunk, requestId));
  }

  private then(step: () => void | Promise<void>): void {
    this.queue = this.queue.then(step).catch(() => undefined);
  }

  private async write(chunk: Chunk, requestId: unknown): Promise<void> {
    if (this.socket.destroyed) return;
    let bytes = fillPlaceholder(chunk.bytes, RUN_ID, () => this.runId);
    bytes = fillPlaceholder(bytes, REQUEST_ID, () => JSON.stringify(requestId ?? null));
    bytes = fillPlaceholder(bytes, NEXT_SEQ, () => String(++this.seq));
    const cuts = (chunk.splitAt ?? []).map((c) => Math.min(c, bytes.length - 1));
    let at = 0;
    for (const cut of [...cuts, bytes.length]) {
      if (cut <= at) continue;
      if (this.socket.destroyed) return;
      const piece = bytes.subarray(at, cut);
      at = cut;
      // Backpressure: a host that stops reading must not make the player buffer without bound.
      if (!this.socket.write(piece)) await drainOrClose(this.socket);
      else if (cut < bytes.length) await new Promise((r) => setImmediate(r));
    }
  }
}

function drainOrClose(socket: Socket): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      socket.off('drain', done);
      socket.off('close', done);
      resolve();
    };
    socket.once('drain', done);
    socket.once('close', done);
  });
}

const INIT_ANSWER: Chunk = {
  bytes: Buffer.from(
    `{"jsonrpc":"2.0","id":${REQUEST_ID},"result":{"protocolVersion":1,` +
      `"runner":{"name":"fuzz","version":"0.0.0"},"capabilities":{"cancel":true}}}\n`,
  ),
  effect: 'ok',
  note: 'initialize answer',
};

const SHUTDOWN_ANSWER: Chunk = {
  bytes: Buffer.from(`{"jsonrpc":"2.0","id":${REQUEST_ID},"result":{}}\n`),
  effect: 'ok',
  note: 'shutdown answer',
};
