import { readFileSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { HostError } from '../../host/errors.js';
import { spawnRunner } from '../../host/process/spawnRunner.js';

/** Everything `stream` gives until it ends. */
const drain = (stream: Readable) =>
  new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.once('end', () => resolve(Buffer.concat(chunks)));
    stream.once('error', reject);
  });

/** The exit of a started runner, as supervision sees it. */
const exitOf = (child: { once(e: 'exit', l: (code: number | null, signal: string | null) => void): unknown }) =>
  new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );

/** Fields of /proc/<pid>/stat after the command: state, ppid, pgrp, session. */
function stat(pid: number) {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const [, ppid, pgrp, session] = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { ppid: Number(ppid), pgrp: Number(pgrp), session: Number(session) };
}

/** True once `pid` has exited (a zombie not yet reaped, or gone). */
function goneOrZombie(pid: number): boolean {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return text.slice(text.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

const sh = (script: string, env: Record<string, string> = { PATH: '/usr/bin:/bin' }) => ({
  command: '/bin/sh',
  args: ['-c', script],
  cwd: '/',
  env,
});

// docs/runner-spawner.md: the runner is started by the runner spawner, not forked from the host.
describe('runners started through the runner spawner', () => {
  it('is its own session and group leader, a child of the spawner, with its stdio and exit code', async () => {
    const proc = await spawnRunner(sh('read line; printf "out:%s" "$line"; printf err >&2; exit 3'));
    const s = stat(proc.pid);
    expect([s.pgrp, s.session]).toEqual([proc.pid, proc.pid]);
    expect(s.ppid).not.toBe(process.pid);
    expect(stat(s.ppid).ppid).toBe(process.pid);
    const [out, err, exit] = [drain(proc.stdout), drain(proc.stderr), exitOf(proc.child)];
    proc.stdin.end('hello\n');
    expect((await out).toString()).toBe('out:hello');
    expect((await err).toString()).toBe('err');
    expect(await exit).toEqual({ code: 3, signal: null });
    expect([proc.child.exitCode, proc.child.signalCode]).toEqual([3, null]);
  });

  it('loses no byte a runner writes while the host is too busy to take its output', async () => {
    await exitOf((await spawnRunner(sh('exit 0'))).child); // the spawner is up
    const starting = spawnRunner(sh('head -c 1000000 /dev/zero | tr "\\0" x; printf end'));
    // A host whose event loop is blocked (a busy host under load): the spawner holds the runner's sockets,
    // unacknowledged, while the runner writes more than a socket buffer. The spawner must not read them meanwhile (what
    // it reads from a handle it sends is lost).
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1500);
    const out = await drain((await starting).stdout);
    expect(out.length).toBe(1_000_003);
    expect(out.subarray(-3).toString()).toBe('end');
  });

  it('loses no byte of a runner that wrote and exited before the host took its stdio', async () => {
    await exitOf((await spawnRunner(sh('exit 0'))).child); // the spawner is up
    const starting = spawnRunner(sh('printf out; printf err >&2; exit 4'));
    // The runner exits while the host's loop is blocked: node resumes an exited child's unread stdio streams (its
    // flushStdio), and the spawner still holds its copies of the sockets, unacknowledged. It must read nothing.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 500);
    const proc = await starting;
    const [out, err, exit] = [drain(proc.stdout), drain(proc.stderr), exitOf(proc.child)];
    expect([(await out).toString(), (await err).toString(), await exit]).toEqual([
      'out',
      'err',
      { code: 4, signal: null },
    ]);
  });

  it('gives the runner exactly the environment asked for', async () => {
    const proc = await spawnRunner({ command: '/usr/bin/env', args: [], cwd: '/', env: { ONLY: 'this' } });
    expect((await drain(proc.stdout)).toString()).toBe('ONLY=this\n');
  });

  it('reports a signal that killed the runner, sent to its group by pid', async () => {
    const proc = await spawnRunner(sh('sleep 30'));
    const exit = exitOf(proc.child);
    process.kill(-proc.pid, 'SIGTERM');
    expect(await exit).toEqual({ code: null, signal: 'SIGTERM' });
  });

  it('fails with RUNNER_SPAWN_FAILED naming the errno when the command cannot start', async () => {
    const failed = spawnRunner({ command: '/nonexistent/runner', args: [], cwd: '/', env: {} });
    await expect(failed).rejects.toThrow(HostError);
    await expect(failed).rejects.toMatchObject({
      code: 'RUNNER_SPAWN_FAILED',
      message: 'cannot start runner /nonexistent/runner: ENOENT',
    });
  });

  it('kills a live runner and reports SIGKILL when the spawner dies, then starts a new spawner', async () => {
    const proc = await spawnRunner(sh('sleep 30'));
    const spawner = stat(proc.pid).ppid;
    const exit = exitOf(proc.child);
    process.kill(spawner, 'SIGKILL');
    expect(await exit).toEqual({ code: null, signal: 'SIGKILL' });
    // The runner's group was killed (fail closed), not left unsupervised.
    await expect.poll(() => goneOrZombie(proc.pid)).toBe(true);
    const next = await spawnRunner(sh('read line'));
    expect(stat(next.pid).ppid).not.toBe(spawner);
    const nextExit = exitOf(next.child);
    next.stdin.end('\n');
    expect(await nextExit).toEqual({ code: 0, signal: null });
  });
});
