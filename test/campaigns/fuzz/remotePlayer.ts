// The campaign's handle on the fuzz player process (playerProcess.ts): arm a lane's socket with a case, collect what
// the runner side saw. One case at a time per socket.
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { PlayLog } from './player.js';

/** Campaign → player: listen on `socketPath` for the case of `seed`, or hand back what that case's runner saw. */
export type PlayerRequest = { op: 'arm'; socketPath: string; seed: number } | { op: 'collect'; socketPath: string };
/** Player → campaign: the socket listens, or the case's log (sent once its connection closed). */
export type PlayerReply = { op: 'armed'; socketPath: string } | { op: 'log'; socketPath: string; log: PlayLog };

/** The player process, started by {@link RemotePlayer.start}. */
export class RemotePlayer {
  private waiting = new Map<string, { resolve(reply: PlayerReply): void; reject(error: Error): void }>();
  private gone: Error | undefined;

  private constructor(private readonly child: ChildProcess) {
    child.on('message', (reply: PlayerReply) => {
      const key = `${reply.op}:${reply.socketPath}`;
      const waiter = this.waiting.get(key);
      this.waiting.delete(key);
      waiter?.resolve(reply);
    });
    child.on('exit', (code, signal) => {
      this.gone = new Error(`the fuzz player process exited (${signal ?? code})`);
      for (const waiter of this.waiting.values()) waiter.reject(this.gone);
      this.waiting.clear();
    });
  }

  /** Fork the player process (with this process's loader flags, so it runs the TypeScript sources too). */
  static async start(): Promise<RemotePlayer> {
    const child = fork(fileURLToPath(new URL('./playerProcess.ts', import.meta.url)), { stdio: 'inherit' });
    await new Promise<void>((resolve, reject) => child.once('spawn', resolve).once('error', reject));
    return new RemotePlayer(child);
  }

  /** The socket listens for the runner that plays the case of `seed`. */
  async arm(socketPath: string, seed: number): Promise<void> {
    await this.ask({ op: 'arm', socketPath, seed }, 'armed');
  }

  /** What the runner side saw of the host in the case armed last on `socketPath`; the socket stops listening. */
  async collect(socketPath: string): Promise<PlayLog> {
    const reply = await this.ask({ op: 'collect', socketPath }, 'log');
    return (reply as Extract<PlayerReply, { op: 'log' }>).log;
  }

  /** Stop the player process and wait for its exit. */
  async close(): Promise<void> {
    if (this.gone) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.disconnect();
    await exited;
  }

  private ask(request: PlayerRequest, answer: PlayerReply['op']): Promise<PlayerReply> {
    if (this.gone) return Promise.reject(this.gone);
    return new Promise((resolve, reject) => {
      this.waiting.set(`${answer}:${request.socketPath}`, { resolve, reject });
      this.child.send(request);
    });
  }
}
