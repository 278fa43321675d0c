// Run sockets a killed host left (host/sandbox/runSockets.ts): swept at start-up for runs that are
// over, never for a live run, never a link (nor what it points to), a folder or a regular file. The
// sockets are real: bound by a child process that is then SIGKILLed, as a killed host leaves them.
// openHost's call (after recovery) is tested in test/unit/start.test.ts.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runSocketPath, sweepRunSockets } from '../../../host/sandbox/runSockets.js';

/** A unix socket file left behind: bound by a process that was then killed (no one unlinked it). */
function leftSocket(path: string): string {
  const kill = "() => process.kill(process.pid, 'SIGKILL')";
  const bind = `require('net').createServer().listen(${JSON.stringify(path)}, ${kill})`;
  try {
    execFileSync(process.execPath, ['-e', bind], { stdio: 'ignore' });
  } catch {
    // killed, as intended
  }
  expect(existsSync(path), path).toBe(true);
  return path;
}

const fifo = (path: string) => execFileSync('/usr/bin/mkfifo', ['-m', '0600', path], { env: {}, stdio: 'ignore' });

describe('sweepRunSockets', () => {
  it('removes the sockets and FIFOs of runs that are over; keeps live runs, links, folders and files', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'paddock-sockets-'));
    const outside = mkdtempSync(join(tmpdir(), 'paddock-sockets-outside-'));
    writeFileSync(join(outside, 'run_target0001.sock'), 'not ours');
    mkdirSync(join(dataDir, 'sockets'));
    const over = new Set(['run_ended00001', 'run_ended00002', 'run_link000001', 'run_file000001', 'run_dir0000001']);
    leftSocket(runSocketPath(dataDir, 'run_ended00001', 'egress'));
    leftSocket(runSocketPath(dataDir, 'run_ended00001', 'gateway'));
    fifo(join(dataDir, 'sockets', 'run_ended00002.sock'));
    leftSocket(runSocketPath(dataDir, 'run_live000001', 'gateway'));
    symlinkSync(join(outside, 'run_target0001.sock'), join(dataDir, 'sockets', 'run_link000001.sock'));
    writeFileSync(join(dataDir, 'sockets', 'run_file000001.sock'), 'a file');
    mkdirSync(join(dataDir, 'sockets', 'run_dir0000001.sock'));
    leftSocket(join(dataDir, 'sockets', 'not-a-run.sock'));

    const removed = sweepRunSockets(dataDir, (runId) => over.has(runId));
    expect(removed.sort()).toEqual(['run_ended00001.gateway.sock', 'run_ended00001.sock', 'run_ended00002.sock']);
    expect(readdirSync(join(dataDir, 'sockets')).sort()).toEqual([
      'not-a-run.sock',
      'run_dir0000001.sock',
      'run_file000001.sock',
      'run_link000001.sock',
      'run_live000001.gateway.sock',
    ]);
    expect(readFileSync(join(outside, 'run_target0001.sock'), 'utf8')).toBe('not ours');
  });

  it('no sockets folder: nothing to do', () => {
    expect(sweepRunSockets(mkdtempSync(join(tmpdir(), 'paddock-sockets-')), () => true)).toEqual([]);
  });
});
