// The fuzzing runner's brain, run in the player process (playerProcess.ts): a Unix socket the runner process (the
// bridge, bridge.c) connects to, playing one case per connection. The host sees an ordinary runner process.
import { rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { fillPlaceholder, NEXT_SEQ, REQUEST_ID, RUN_ID, type Chunk } from './chunk.js';
import type { FuzzCase } from './cases.js';

/** What the player saw of the host during one case. */
export interface PlayLog {
  /** Methods of the host's requests and notifications, in order. */
  hostMethods: string[];
  /** Answers the host sent to the runner's requests. */
  answers: number;
  /** Lines from the host that were not JSON (the host must only ever send protocol messages). */
  badHostLines: string[];
}

/**
 * One lane's socket, listening only while a case is armed: {@link FuzzPlayer.arm} listens and plays the case on the
 * first connection; {@link FuzzPlayer.collect} waits for that connection to close, then stops listening, so a
 * connection left in the backlog can never be taken by the next case.
 */
export class FuzzPlayer {
  private server: Server | undefined;
  private log: PlayLog = emptyLog();
  private connection: Promise<void> | undefined;

  constructor(readonly socketPath: string) {}

  /** Listen for the runner of `fuzz`. */
  arm(fuzz: FuzzCase): Promise<void> {
    this.log = emptyLog();
    this.connection = undefined;
    const server = createServer({ pauseOnConnect: false }, (socket) => {
      socket.on('error', () => undefined);
      if (this.connection) return void socket.destroy();
      this.connection = new Promise((resolve) => socket.once('close', () => resolve()));
      new Play(socket, fuzz, this.log).start();
    });
    this.server = server;
    rmSync(this.socketPath, { force: true });
    return new Promise((resolve) => server.listen(this.socketPath, resolve));
  }

  /** What the case's runner did, once its connection (if one came) closed; the socket stops listening. */
  async collect(): Promise<PlayLog> {
    await this.connection;
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
    return this.log;
  }
}

function emptyLog(): PlayLog {
  return { hostMethods: [], answers: 0, badHostLines: [] };
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
        if (fuzz.handshake === 'close') return this.then(() => void this.socket.end());
        if (fuzz.handshake === 'silent') return;
        if (fuzz.handshake === 'badAnswer') return this.send([fuzz.initAnswer!], msg.id);
        return this.send([INIT_ANSWER], msg.id);
      case 'run':
        this.runId = (msg.params as { run: { runId: string } }).run.runId;
        this.send(fuzz.body, msg.id);
        this.send(fuzz.endChunks, msg.id);
        // A half-close, as a runner exits: the bridge relays all written before it, then exits.
        if (fuzz.ending === 'close' || fuzz.ending === 'partialClose') this.then(() => void this.socket.end());
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
    if (this.socket.destroyed || this.socket.writableEnded) return;
    let bytes = fillPlaceholder(chunk.bytes, RUN_ID, () => this.runId);
    bytes = fillPlaceholder(bytes, REQUEST_ID, () => JSON.stringify(requestId ?? null));
    bytes = fillPlaceholder(bytes, NEXT_SEQ, () => String(++this.seq));
    const cuts = (chunk.splitAt ?? []).map((c) => Math.min(c, bytes.length - 1));
    let at = 0;
    for (const cut of [...cuts, bytes.length]) {
      if (cut <= at) continue;
      if (this.socket.destroyed || this.socket.writableEnded) return;
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
