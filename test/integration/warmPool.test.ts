// Warm pools (docs/warm-pool.md) with a real store, dispatcher and runner processes: a pooled process serves one run
// and is gone after it, pools of other bindings and tenants are never taken from, a warm run's isolation report is a
// cold run's, a slot that died while idle is not used, and closing the host leaves no pooled process.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { DispatchTicket } from '../../host/dispatch/dispatcher.js';
import type { RunOutcome } from '../../host/process/outcome.js';
import { openHost } from '../../host/start.js';
import { TOKENS } from '../../host/di/tokens.js';
import { parseLimits } from '../../host/config/limits.js';
import { paddock } from '../helpers/cli.js';
import { chatEvent, FIXTURE_RUNNERS, tempHost } from '../helpers/host.js';

const started = (t: DispatchTicket) => {
  if (t.status === 'duplicate') throw new Error('unexpected duplicate');
  return t;
};

/** What the reports-its-process runner said about the process that served the run. */
interface Facts {
  pid: number;
  envRunId: string;
  cwd: string;
  home: string;
  workspace: string;
}
const factsOf = (outcome: RunOutcome): Facts => {
  expect(outcome.status).toBe('completed');
  const part = outcome.result?.output?.parts[0] as { text: string } | undefined;
  return JSON.parse(part!.text) as Facts;
};
const gone = (pid: number) => {
  try {
    process.kill(pid, 0);
    return false;
  } catch {
    return true;
  }
};

/** Resolves once `pid` is a zombie or gone (its /proc state), polling; fails after 5 s. */
async function deadButUnreaped(pid: number): Promise<void> {
  const state = () => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
      return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    } catch {
      return 'gone';
    }
  };
  for (const until = Date.now() + 5_000; !['Z', 'X', 'gone'].includes(state());) {
    if (Date.now() > until) throw new Error(`process ${pid} still ${state()} 5 s after SIGKILL`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const host = tempHost();
const pools = host.runs.warmPools;
const warm = { runner: 'reports-its-process', sandbox: 'process', limits: { warmPool: 1, wallClockMs: 20_000 } };
host.apply({
  bindings: [
    { id: 'warm', ...warm, route: { platform: 'telegram', bot: 'warm' } },
    { id: 'warm-acme', tenant: 'acme', ...warm, route: { platform: 'telegram', bot: 'warm' } },
    { id: 'cold', ...warm, limits: { wallClockMs: 20_000 }, route: { platform: 'telegram', bot: 'cold' } },
    { id: 'writer', ...warm, runner: 'writes-files', route: { platform: 'telegram', bot: 'writer' } },
    {
      id: 'writer-cold',
      ...warm,
      runner: 'writes-files',
      limits: {},
      route: { platform: 'telegram', bot: 'coldwriter' },
    },
  ],
});
afterAll(async () => {
  await pools.close();
  await host.close();
  rmSync(host.dataDir, { recursive: true, force: true });
});

const run = async (bot: string, conversation: string, tenant?: string) =>
  (await started(await host.dispatcher.dispatch(chatEvent({ bot, conversation: { id: conversation } }), {}, { tenant }))
    .done) as RunOutcome;
const isolationOf = (runId: string) =>
  (host.store.audit.records({ runId, types: ['run.spawned'] })[0]!.data as { isolation: unknown }).isolation;

describe('warm pools (real store, real runner processes)', () => {
  it('a pooled process serves exactly one run, then is gone, and the pool is refilled with a new one', async () => {
    const first = factsOf(await run('warm', 'one-run')); // cold: it fills the pool
    expect(first.envRunId).not.toMatch(/^run_w/);
    await pools.filled();
    const [pooled] = pools.idlePids('warm');
    expect(pooled).toBeDefined();

    const second = factsOf(await run('warm', 'one-run'));
    expect(second.pid).toBe(pooled);
    // The slot's own identity, adopted by the run: its workspace is the run's, told to the runner and its cwd.
    expect(second.envRunId).toMatch(/^run_w/);
    expect(second.cwd).toBe(second.workspace);
    expect(second.home).toBe(join(second.workspace, 'home'));
    expect(gone(second.pid)).toBe(true);
    expect(existsSync(second.workspace)).toBe(false);

    await pools.filled();
    const [refilled] = pools.idlePids('warm');
    expect(refilled).toBeDefined();
    expect(refilled).not.toBe(pooled);
    const third = factsOf(await run('warm', 'one-run'));
    expect(third.pid).toBe(refilled);
    expect(third.envRunId).not.toBe(second.envRunId);
  });

  it('a run takes only from its own binding and tenant, never from a pool of another', async () => {
    factsOf(await run('warm', 'tenants'));
    factsOf(await run('warm', 'tenants', 'acme'));
    await pools.filled();
    const [ours] = pools.idlePids('warm');
    const [theirs] = pools.idlePids('warm-acme');
    expect(ours).toBeDefined();
    expect(theirs).toBeDefined();
    expect(ours).not.toBe(theirs);

    expect(factsOf(await run('warm', 'tenants', 'acme')).pid).toBe(theirs);
    expect(pools.idlePids('warm')).toEqual([ours]); // the other pool was not touched
    expect(factsOf(await run('warm', 'tenants')).pid).toBe(ours);
    // A binding without a pool never takes a slot, and starts none.
    const cold = factsOf(await run('cold', 'tenants'));
    expect(cold.envRunId).not.toMatch(/^run_w/);
    expect(pools.idlePids('cold')).toEqual([]);
  });

  it("a warm run's isolation report is the same as a cold run's of its binding", async () => {
    const coldTicket = started(await host.dispatcher.dispatch(chatEvent({ bot: 'cold', conversation: { id: 'iso' } })));
    await coldTicket.done;
    factsOf(await run('warm', 'iso'));
    await pools.filled();
    const warmTicket = started(await host.dispatcher.dispatch(chatEvent({ bot: 'warm', conversation: { id: 'iso' } })));
    expect(factsOf(await warmTicket.done).envRunId).toMatch(/^run_w/);
    expect(isolationOf(warmTicket.runId)).toEqual(isolationOf(coldTicket.runId));
  });

  it("the pool refills after a warm run's first update is out, not when the run takes its slot", async () => {
    factsOf(await run('warm', 'refill'));
    await pools.filled();
    expect(pools.idlePids('warm')).toHaveLength(1);
    const atFirstUpdate: { starting: number; idle: number }[] = [];
    const ticket = started(
      await host.dispatcher.dispatch(chatEvent({ bot: 'warm', conversation: { id: 'refill' } }), {
        onUpdate: () =>
          void atFirstUpdate.push({ starting: pools.startingCount(), idle: pools.idlePids('warm').length }),
      }),
    );
    expect(factsOf(await ticket.done).envRunId).toMatch(/^run_w/);
    // Nothing was started for the pool before the subscriber had the run's first update.
    expect(atFirstUpdate[0]).toEqual({ starting: 0, idle: 0 });
    await pools.filled();
    expect(pools.idlePids('warm')).toHaveLength(1);
  });

  it("a warm run's own writes are recorded as a cold run's: the slot's snapshot predates its process", async () => {
    const changes = async (bot: string) => {
      const plan = { direct: [{ path: 'out/report.txt', content: 'written by the run\n' }] };
      const ticket = started(
        await host.dispatcher.dispatch(chatEvent({ bot, text: JSON.stringify(plan), conversation: { id: bot } })),
      );
      expect((await ticket.done).status).toBe('completed');
      return host.store
        .readEvents(ticket.sessionId)
        .filter((e) => e.runId === ticket.runId && e.type === 'file.changed')
        .map((e) => {
          const { path, change, via, after } = e.data as { path: string; change: string; via: string; after: unknown };
          return { path, change, via, after };
        });
    };
    await changes('writer'); // cold: it fills the pool
    await pools.filled();
    const [pooled] = pools.idlePids('writer');
    expect(pooled).toBeDefined();
    const warmChanges = await changes('writer');
    expect(pools.idlePids('writer')).not.toContain(pooled); // that run took the slot
    expect(warmChanges).toEqual(await changes('coldwriter'));
    expect(warmChanges.map((c) => [c.path, c.change])).toEqual([['out/report.txt', 'added']]);
  });

  it('a pooled process that died while idle is not used: the run gets a fresh one or starts cold', async () => {
    factsOf(await run('warm', 'died'));
    await pools.filled();
    const [victim] = pools.idlePids('warm');
    expect(victim).toBeDefined();
    const retired = once(pools.events, 'retired');
    process.kill(-victim!, 'SIGKILL');
    expect(await retired).toEqual([victim]);
    const next = factsOf(await run('warm', 'died'));
    expect(next.pid).not.toBe(victim);
  });

  it('a pooled process killed just before a run is not handed to it (before its exit is even seen)', async () => {
    factsOf(await run('warm', 'killed-now'));
    await pools.filled();
    const [victim] = pools.idlePids('warm');
    process.kill(-victim!, 'SIGKILL');
    // kill() returns before the kernel has ended the process (on a busy machine it may not have run yet): wait for it
    // to be a zombie, which Node has not reaped yet (no `exit` seen) — the moment this test is about.
    await deadButUnreaped(victim!);
    const next = factsOf(await run('warm', 'killed-now'));
    expect(next.pid).not.toBe(victim);
  });

  it("another paddock process's start-up sweeps leave a live slot's workspace, image and mount alone", async () => {
    // The outside attack: `paddock runs list` on the data folder unmounted live slots' quotas and deleted their images.
    factsOf(await run('warm', 'swept'));
    await pools.filled();
    const slots = readdirSync(join(host.dataDir, 'workspaces')).filter((name) => name.startsWith('run_w'));
    expect(slots.length).toBeGreaterThan(0);
    const mounted = () => readFileSync('/proc/self/mountinfo', 'utf8');
    const images = () => readdirSync(join(host.dataDir, 'quota', 'workspaces'));
    const quota = existsSync(join(host.dataDir, 'quota', 'workspaces'));
    const before = { mounts: slots.filter((id) => mounted().includes(`/workspaces/${id} `)), images: images() };
    if (quota) expect(before.mounts).toEqual(slots); // this machine gives runs a disk quota: each slot has its mount

    const listed = await paddock(['runs', 'list'], { dataDir: host.dataDir });
    expect(listed.exitCode).toBe(0);
    for (const id of slots) expect(existsSync(join(host.dataDir, 'workspaces', id))).toBe(true);
    expect(slots.filter((id) => mounted().includes(`/workspaces/${id} `))).toEqual(before.mounts);
    if (quota) for (const id of slots) expect(images()).toContain(`${id}.img`);
    // And the slot still serves its run.
    const [pooled] = pools.idlePids('warm');
    expect(factsOf(await run('warm', 'swept')).pid).toBe(pooled);
  });
});

describe('warm pools and host shutdown', () => {
  it('closing the host stops every pooled process and removes its workspace', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'paddock-host-'));
    const opened = await openHost({
      dataDir,
      limits: parseLimits({ diskBytes: 64 * 1024 * 1024 }),
      runnerDirs: [FIXTURE_RUNNERS],
      logLevel: 'silent',
      keepWorkspaces: false,
      mountRoots: [],
    });
    const { applyConfig } = await import('../../host/bindings/apply.js');
    const { discoverRunners } = await import('../../host/plugins/catalog.js');
    applyConfig(
      opened.store,
      { bindings: [{ id: 'warm', ...warm, limits: { ...warm.limits, warmPool: 2 }, route: { platform: 'telegram' } }] },
      {
        catalog: discoverRunners([FIXTURE_RUNNERS]),
        mountRoots: [],
        redactor: opened.container.resolve(TOKENS.Redactor),
      },
      { by: 'user:test' },
    );
    const dispatcher = opened.container.resolve(TOKENS.Dispatcher);
    const ticket = started(await dispatcher.dispatch(chatEvent({ conversation: { id: 'shutdown' } })));
    factsOf(await ticket.done);
    const own = opened.container.resolve(TOKENS.RunService).warmPools;
    await own.filled();
    const pids = own.idlePids();
    expect(pids).toHaveLength(2);
    await opened.close();
    expect(pids.filter((pid) => !gone(pid))).toEqual([]);
    expect(readdirSync(join(dataDir, 'workspaces')).filter((d) => d.startsWith('run_w'))).toEqual([]);
    rmSync(dataDir, { recursive: true, force: true });
  });
});
