// `paddock runs cancel <runId>` from one process stops a run another paddock process holds: a queued
// dispatched run never starts, a running one ends `cancelled`, an ad-hoc `paddock run` too. Audited.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { jsonLines, paddock } from '../helpers/cli.js';
import { chatEvent, FIXTURE_RUNNERS } from '../helpers/host.js';

const env = { PADDOCK_RUNNER_DIRS: FIXTURE_RUNNERS };

/** A rendezvous socket: each run of the rendezvous fixture connects and sends "<runId> <text>". */
function rendezvous(dir: string) {
  const path = join(dir, 'rv.sock');
  const waiting: ((runId: string) => void)[] = [];
  const arrived: string[] = [];
  const sockets: Socket[] = [];
  const server = createServer((s) => {
    sockets.push(s);
    s.on('error', () => undefined);
    s.once('data', (chunk) => {
      const runId = chunk.toString().split(' ')[0]!;
      const wake = waiting.shift();
      if (wake) wake(runId);
      else arrived.push(runId);
    });
  }).listen(path);
  return {
    path,
    /** The run id of the next run that connects. */
    next: () =>
      arrived.length ? Promise.resolve(arrived.shift()!) : new Promise<string>((resolve) => waiting.push(resolve)),
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

/** Resolves with the first stdout line of a running `paddock … --json` child that matches. */
function lineMatching(child: ReturnType<typeof paddock>, pattern: RegExp): Promise<RegExpMatchArray> {
  return new Promise((resolve) => {
    let text = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const m = text.match(pattern);
      if (m) resolve(m);
    });
  });
}

describe('paddock runs cancel', () => {
  it(
    'cancels a queued and a running dispatched run held by other processes, and an ad-hoc run; audited; ended ' +
      'and unknown runs are refused',
    async () => {
      const home = mkdtempSync(join(tmpdir(), 'paddock-cancel-'));
      const rv = rendezvous(home);
      const file = join(home, 'paddock.yaml');
      writeFileSync(
        file,
        `bindings:\n  - { id: held, runner: waits-for-go, sandbox: process, route: { platform: telegram, bot: ` +
          `held }, config: { socket: ${JSON.stringify(rv.path)} } }\n`,
      );
      expect((await paddock(['apply', '-f', file], { dataDir: home, env })).exitCode).toBe(0);

      // Two events of one conversation, each in its own `paddock dispatch` process: the first runs, the second
      // waits for the session.
      const first = paddock(['dispatch', '-f', '-', '--json'], {
        dataDir: home,
        env,
        input: JSON.stringify(chatEvent({ bot: 'held', text: 'first' })),
      });
      const runningId = await rv.next();
      const second = paddock(['dispatch', '-f', '-', '--json'], {
        dataDir: home,
        env,
        input: JSON.stringify(chatEvent({ bot: 'held', text: 'second' })),
      });
      const queuedId = (await lineMatching(second, /run (run_[\w-]+) queued/))[1]!;
      expect(queuedId).not.toBe(runningId);

      const cancelQueued = await paddock(
        ['runs', 'cancel', queuedId, '--reason', 'not needed any more', '--by', 'ada', '--json'],
        { dataDir: home, env },
      );
      expect(cancelQueued.exitCode, cancelQueued.stderr).toBe(0);
      expect(JSON.parse(cancelQueued.stdout)).toEqual({
        runId: queuedId,
        cancelRequested: true,
        status: 'queued',
        reason: 'not needed any more',
        by: 'user:ada',
      });
      const secondDone = await second;
      expect(secondDone.exitCode).toBe(130);
      const secondOutcome = jsonLines(secondDone.stdout).find((l) => l.type === 'outcome')!.outcome as {
        status: string;
        reason: string;
      };
      expect(secondOutcome).toMatchObject({ status: 'cancelled', reason: 'not needed any more (by user:ada)' });

      const cancelRunning = await paddock(['runs', 'cancel', runningId], {
        dataDir: home,
        env: { ...env, USER: 'grace' },
      });
      expect(cancelRunning.exitCode, cancelRunning.stderr).toBe(0);
      expect(cancelRunning.stdout).toBe(
        `asked the host process holding run ${runningId} (running) to cancel it: cancelled with paddock runs ` +
          `cancel (by user:grace)`,
      );
      const firstDone = await first;
      expect(firstDone.exitCode).toBe(130);
      expect(jsonLines(firstDone.stdout).find((l) => l.type === 'outcome')!.outcome).toMatchObject({
        status: 'cancelled',
      });

      // An ad-hoc run (no dispatcher in its process) is reached the same way.
      const adHoc = paddock(
        ['run', '--runner', 'waits-for-go', '--text', 'x', '--config', JSON.stringify({ socket: rv.path }), '--json'],
        { dataDir: home, env },
      );
      const adHocId = await rv.next();
      expect((await paddock(['runs', 'cancel', adHocId, '--by', 'ada'], { dataDir: home, env })).exitCode).toBe(0);
      const adHocDone = await adHoc;
      expect(adHocDone.exitCode).toBe(130);
      expect(jsonLines(adHocDone.stdout).find((l) => l.type === 'outcome')!.outcome).toMatchObject({
        status: 'cancelled',
        reason: 'runner stopped on run/cancel',
      });

      // The store says so too, for every run.
      const runs = JSON.parse((await paddock(['runs', 'list', '--json'], { dataDir: home, env })).stdout) as {
        id: string;
        status: string;
      }[];
      for (const id of [queuedId, runningId, adHocId])
        expect(runs.find((r) => r.id === id)?.status, id).toBe('cancelled');

      // Ended: exit 1 and the status; unknown: exit 2, one line.
      const again = await paddock(['runs', 'cancel', runningId], { dataDir: home, env });
      expect([again.exitCode, again.stdout]).toEqual([1, '']);
      expect(again.stderr).toMatch(
        new RegExp(`^paddock: run ${runningId} already ended cancelled \\(.*\\); nothing to cancel$`),
      );
      const againJson = await paddock(['runs', 'cancel', runningId, '--json'], { dataDir: home, env });
      expect(againJson.exitCode).toBe(1);
      expect(JSON.parse(againJson.stdout)).toMatchObject({
        runId: runningId,
        cancelRequested: false,
        status: 'cancelled',
      });
      const unknown = await paddock(['runs', 'cancel', 'run_nope-0000'], { dataDir: home, env });
      expect([unknown.exitCode, unknown.stderr]).toEqual([2, 'paddock: no run run_nope-0000']);

      // Audited: who asked, for which run, why; a refused request writes nothing.
      const audit = (await paddock(['audit', 'export'], { dataDir: home })).stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { type: string; actor: string; runId?: string; data: { reason?: string } });
      const requests = audit
        .filter((r) => r.type === 'run.cancel_requested')
        .map((r) => [r.runId, r.actor, r.data.reason]);
      expect(requests).toEqual([
        [queuedId, 'user:ada', 'not needed any more'],
        [runningId, 'user:grace', 'cancelled with paddock runs cancel'],
        [adHocId, 'user:ada', 'cancelled with paddock runs cancel'],
      ]);
      expect((await paddock(['audit', 'verify'], { dataDir: home })).exitCode).toBe(0);
      rv.close();
    },
    300_000,
  );
});
