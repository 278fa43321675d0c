import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildBridge } from '../../campaigns/fuzz/bridge.js';
import { makeCase } from '../../campaigns/fuzz/cases.js';
import { FuzzPlayer } from '../../campaigns/fuzz/player.js';

const dir = mkdtempSync(join(tmpdir(), 'paddock-fuzz-side-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('protocol fuzz: the runner side loses nothing', () => {
  it('the bridge relays what a player writes after the host closed stdin, exits when it hangs up', async () => {
    const bridge = buildBridge(dir);
    const socketPath = join(dir, 'relay.sock');
    const big = Buffer.alloc(1 << 20, 'x');
    // A player slower than socat's old 50 ms cut-off: it answers the host's end of input only 200 ms later.
    const server = createServer({ allowHalfOpen: true }, (socket) => {
      socket.resume();
      socket.once('end', () => setTimeout(() => socket.end(big), 200));
    });
    server.listen(socketPath);
    await new Promise((resolve) => server.once('listening', resolve));
    const child = spawn(bridge, [socketPath], { stdio: ['pipe', 'pipe', 'inherit'] });
    let received = 0;
    child.stdout.on('data', (chunk: Buffer) => (received += chunk.length));
    child.stdin.end('{"jsonrpc":"2.0","method":"bye"}\n');
    const code = await new Promise((resolve) => child.once('close', resolve));
    server.close();
    expect({ code, received }).toEqual({ code: 0, received: big.length });
  });

  it('a lane socket stops listening once its case is collected: no late connection takes the next case', async () => {
    const player = new FuzzPlayer(join(dir, 'lane.sock'));
    await player.arm(makeCase(1));
    const first = connect(player.socketPath);
    await new Promise((resolve) => first.once('connect', resolve));
    first.end();
    const log = await player.collect();
    expect(log.badHostLines).toEqual([]);
    const late = connect(player.socketPath);
    const error = await new Promise<NodeJS.ErrnoException>((resolve) => late.once('error', resolve));
    expect(error.code).toBe('ENOENT');
  });
});
