// The CLI exits without tearing its heap down (host/cli/entry.ts), but never before its output has left: a reader
// that is slow to take a long output still gets every byte (a pipe takes 64 KiB at once; Node queues the rest).
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { repoPath } from '../helpers/fixtures.js';

/** Resolves once the data folder's only run is recorded as ended (the command is then about to exit). */
async function runEnded(dataDir: string): Promise<void> {
  for (;;) {
    try {
      const db = new Database(join(dataDir, 'paddock.db'), { readonly: true, fileMustExist: true });
      try {
        const row = db.prepare("SELECT count(*) AS n FROM runs WHERE status NOT IN ('queued', 'running')").get() as {
          n: number;
        };
        if (row.n > 0) return;
      } finally {
        db.close();
      }
    } catch {
      // not created yet
    }
    await delay(50);
  }
}

describe('the CLI exits only after its output has flushed', () => {
  it('a reader that takes nothing until the run has ended still gets the whole 1 MB human view', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'paddock-flush-'));
    const word = 'w'.repeat(1000);
    const child = spawn(
      process.execPath,
      [
        repoPath('bin/paddock.js'),
        'run',
        '--runner',
        repoPath('test/fixtures/runnerDirs/streams-given-deltas'),
        '--text',
        word,
        '--config',
        JSON.stringify({ repeat: 1000 }),
      ],
      { cwd: repoPath('.'), env: { ...process.env, PADDOCK_HOME: dataDir, NO_COLOR: '1' } },
    );
    child.stdout.pause(); // the slow reader: nothing is read until the run has ended
    const stderr: Buffer[] = [];
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    // The command records the run's end, then exits. Had it exited without flushing, it would do so now, with
    // most of its output unread; it may not exit while its output waits for this reader.
    const earlyExit = await Promise.race([
      exited.then(() => true),
      runEnded(dataDir).then(() => Promise.race([exited.then(() => true), delay(2_000).then(() => false)])),
    ]);
    expect(earlyExit, 'the command exited while its output was still unread').toBe(false);
    const chunks: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk)).resume(); // paused explicitly: resume to read
    expect(await exited, Buffer.concat(stderr).toString()).toBe(0);
    const stdout = Buffer.concat(chunks).toString();
    expect(stdout.split(word).length - 1).toBe(1000);
    expect(stdout).toMatch(/✓ completed in \d+ ms/);
  }, 60_000);
});
