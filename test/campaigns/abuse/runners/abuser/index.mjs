// The abuse campaign's runner: one abuse per run (config.kind), announced by a 'abuse started' progress update.
// Every child it starts carries config.marker on its command line, so the campaign can look for leftovers.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

const send = (m) => process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', ...m })}\n`);
let seq = 0;
const progress = (runId, message) =>
  send({ method: 'run/update', params: { runId, seq: ++seq, update: { kind: 'progress', message } } });

// A binary fork tree 10 levels deep (at most 2047 shells without a pids limit), whose leaves keep forking.
const BOMB = 'b() { if [ "$1" -gt 0 ]; then b $(($1 - 1)) & b $(($1 - 1)) & fi; while :; do sleep 0.05; done; }; b 10';
// Ignores SIGTERM, as its parent does.
const STUBBORN = 'trap "" TERM; while :; do sleep 1; done';
// Says its pid once it is in its own session, then stays.
const ESCAPEE = 'echo $$; while :; do sleep 1; done';

const abuses = {
  forkBomb(runId, _id, marker) {
    spawn('/bin/sh', ['-c', BOMB, marker], { stdio: 'ignore' });
    progress(runId, 'abuse started');
  },
  memoryHog(runId) {
    progress(runId, 'abuse started');
    const kept = [];
    const grow = () => {
      if (kept.length < 96) kept.push(Buffer.alloc(16 * 1024 * 1024, kept.length + 1));
      setTimeout(grow, 5);
    };
    grow();
  },
  outputFlood(runId) {
    progress(runId, 'abuse started');
    const text = 'y'.repeat(16 * 1024);
    let written = 0;
    const pump = () => {
      while (written < 1024 * 1024 * 1024) {
        const line = JSON.stringify({
          jsonrpc: '2.0',
          method: 'run/update',
          params: { runId, seq: ++seq, update: { kind: 'message.delta', text } },
        });
        written += line.length + 1;
        if (!process.stdout.write(`${line}\n`)) return void process.stdout.once('drain', pump);
      }
    };
    pump();
  },
  sigtermIgnorer(runId, _id, marker) {
    process.on('SIGTERM', () => undefined);
    spawn('/bin/sh', ['-c', STUBBORN, marker], { stdio: 'ignore' });
    progress(runId, 'abuse started');
  },
  setsidEscapee(runId, id, marker) {
    const child = spawn('setsid', ['/bin/sh', '-c', ESCAPEE, marker], { stdio: ['ignore', 'pipe', 'ignore'] });
    createInterface({ input: child.stdout }).once('line', () => {
      child.stdout.destroy();
      progress(runId, 'abuse started');
      send({ id, result: { status: 'completed', output: { parts: [{ type: 'text', text: 'left one behind' }] } } });
    });
  },
};

createInterface({ input: process.stdin }).on('line', (line) => {
  const msg = JSON.parse(line);
  if (msg.method === 'initialize')
    send({
      id: msg.id,
      result: { protocolVersion: 1, runner: { name: 'abuser', version: '0.0.0' }, capabilities: { cancel: true } },
    });
  if (msg.method === 'run') {
    const { kind, marker } = msg.params.binding.config;
    abuses[kind](msg.params.run.runId, msg.id, marker);
  }
  if (msg.method === 'shutdown') {
    send({ id: msg.id, result: {} });
    process.exit(0);
  }
});
setInterval(() => undefined, 60_000);
