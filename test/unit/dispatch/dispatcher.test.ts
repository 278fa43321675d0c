// The dispatcher (host/dispatch/dispatcher.ts) keeps only queues and concurrency. Here it runs
// against FakeRunService: real planning, queueing and ending in a real store (claims live there),
// but a fake `execute` that starts nothing and ends only when the test says so.
import { afterAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { Dispatcher, type DispatchRuns, type DispatchTicket } from '../../../host/dispatch/dispatcher.js';
import { HostError } from '../../../host/errors.js';
import { notStartedOutcome, type RunOutcome } from '../../../host/process/outcome.js';
import { RunJournal, type QueuedRun } from '../../../host/runs/journal.js';
import { planRun, type RunPlan } from '../../../host/runs/plan.js';
import type { RunHooks } from '../../../host/runs/runService.js';
import { probeMachine, type MachineReport } from '../../../host/sandbox/probe.js';
import { dbOf } from '../../../host/state/store.js';
import type { ChatEvent } from '../../../sdk/protocol/types.js';
import { chatEvent, tempHost } from '../../helpers/host.js';

const log = pino({ level: 'silent' });
const real = probeMachine();
/** A fake machine report that can enforce everything: queueing must not depend on this host's sandbox. */
const FAKE_FULL: MachineReport = {
  ...real,
  bwrap: { available: true, path: '/usr/bin/bwrap' },
  cgroups: { ...real.cgroups, memory: 'fake', pids: 'fake' },
  diskQuota: { ...real.diskQuota, available: true },
};

interface Executing {
  queued: QueuedRun;
  /** The plan the dispatcher handed to execute. */
  plan: RunPlan;
  text: string;
  signal: AbortSignal;
  /** End the run (recorded in the store like a real end, which releases its claim). */
  finish(status?: RunOutcome['status']): void;
  /**
   * Record the run's end (its claim released) but hold its teardown open, as a real run's unmounts and cgroup
   * removal do after its end transaction; the returned function ends the teardown (execute resolves).
   */
  endHoldingTeardown(status?: RunOutcome['status']): () => void;
  fail(error: Error): void;
}

/** FakeRunService: the dispatcher's view of the run service; `execute` waits for the test. */
class FakeRunService implements DispatchRuns {
  readonly executing: Executing[] = [];
  readonly abandoned: { runId: string; reason: string; status: string }[] = [];
  private readonly journal: RunJournal;
  private readonly waiters: { n: number; resolve(): void }[] = [];

  constructor(private readonly h: ReturnType<typeof tempHost>) {
    this.journal = new RunJournal(h.store, log, h.redactor);
  }

  plan(request: { kind: 'dispatch'; event: ChatEvent; tenant: string; bindingId?: string }): RunPlan {
    return planRun(
      { config: this.h.config, store: this.h.store, redactor: this.h.redactor, machine: () => FAKE_FULL },
      request,
    );
  }

  queue(plan: RunPlan, event: ChatEvent, sessionId: string, goalRevision: number): QueuedRun {
    return this.journal.queued(plan, event, sessionId, goalRevision);
  }

  /** Set: every abandon is refused with this error, as a host that lost its lease is (runFence.ts). */
  refuseAbandon: Error | undefined;
  /** With {@link refuseAbandon}: only this many abandons are refused (a store that comes back), not every one. */
  refuseAbandonTimes = Infinity;

  abandon(run: QueuedRun, reason: string, status: 'cancelled' | 'failed' = 'cancelled'): void {
    if (this.refuseAbandon && this.refuseAbandonTimes > 0) {
      this.refuseAbandonTimes -= 1;
      throw this.refuseAbandon;
    }
    this.abandoned.push({ runId: run.runId, reason, status });
    this.journal.abandon(run, reason, status);
  }

  execute(queued: QueuedRun, plan: RunPlan, event: ChatEvent, hooks: RunHooks): Promise<RunOutcome> {
    return new Promise<RunOutcome>((resolve, reject) => {
      const text = (event.message?.parts[0] as { text: string } | undefined)?.text ?? '';
      this.executing.push({
        queued,
        plan,
        text,
        signal: hooks.signal!,
        finish: (status = 'completed') => {
          const outcome = { ...notStartedOutcome(queued.runId, 'fake run finished'), status };
          resolve(this.journal.open(queued, plan.runner.manifest.id).ended(outcome));
        },
        endHoldingTeardown: (status = 'completed') => {
          const outcome = { ...notStartedOutcome(queued.runId, 'fake run finished'), status };
          const ended = this.journal.open(queued, plan.runner.manifest.id).ended(outcome);
          return () => resolve(ended);
        },
        fail: reject,
      });
      for (const w of this.waiters.filter((x) => this.executing.length >= x.n)) w.resolve();
    });
  }

  /** Resolves once `n` runs have been executed in total. */
  executed(n: number): Promise<void> {
    return new Promise((resolve) => (this.executing.length >= n ? resolve() : this.waiters.push({ n, resolve })));
  }

  texts(): string[] {
    return this.executing.map((e) => e.text);
  }
}

function setUp(options: { maxConcurrentRuns?: number; maxQueuedRuns?: number; maxQueuedRunsPerTenant?: number } = {}) {
  const h = tempHost(options);
  const base = { runner: 'echo', sandbox: 'process' };
  h.apply({
    bindings: [
      { id: 'q', ...base, route: { bot: 'q' }, limits: { maxQueued: 1, maxConcurrentRuns: 4 } },
      { id: 'serial', ...base, route: { bot: 'serial' }, limits: { maxConcurrentRuns: 1 } },
      { id: 'other', ...base, route: { bot: 'other' } },
      { id: 'steer', ...base, route: { bot: 'steer' }, steering: 'restart' },
      { id: 'jail', runner: 'echo', route: { bot: 'jail' }, sandbox: 'bwrap', limits: { maxConcurrentRuns: 4 } },
      { id: 'q-serial', ...base, route: { bot: 'q-serial' }, limits: { maxQueued: 1, maxConcurrentRuns: 1 } },
    ],
  });
  const runs = new FakeRunService(h);
  const dispatcher = new Dispatcher(h.config, log, h.store, runs, h.redactor);
  return { h, runs, dispatcher };
}

const hosts: ReturnType<typeof tempHost>[] = [];
afterAll(async () => {
  for (const h of hosts) await h.close();
});

const ticket = (t: DispatchTicket) => {
  if (t.status === 'duplicate') throw new Error('unexpected duplicate');
  return t;
};
const event = (bot: string, text: string, conversation = 'c1', id?: string) =>
  chatEvent({ bot, text, conversation: { id: conversation }, id });

describe('Dispatcher queueing against a fake run service', () => {
  it('one active run per session: the next message waits behind it, then runs', async () => {
    const { h, runs, dispatcher } = setUp();
    hosts.push(h);
    const a = ticket(await dispatcher.dispatch(event('q', 'one')));
    const b = ticket(await dispatcher.dispatch(event('q', 'two')));
    expect([a.status, a.position, b.status, b.position]).toEqual(['started', 0, 'queued', 1]);
    await runs.executed(1);
    expect(runs.texts()).toEqual(['one']);
    runs.executing[0]!.finish();
    await runs.executed(2);
    expect(runs.texts()).toEqual(['one', 'two']);
    expect((await a.done).status).toBe('completed');
    runs.executing[1]!.finish();
    expect((await b.done).status).toBe('completed');
    await dispatcher.drain();
  });

  it(
    'runs of different sessions execute side by side; a ' + 'binding at maxConcurrentRuns holds the next back',
    async () => {
      const { h, runs, dispatcher } = setUp();
      hosts.push(h);
      await dispatcher.dispatch(event('other', 'x1', 'c1'));
      await dispatcher.dispatch(event('other', 'x2', 'c2'));
      await runs.executed(2);
      const s1 = ticket(await dispatcher.dispatch(event('serial', 's1', 'c1')));
      const s2 = ticket(await dispatcher.dispatch(event('serial', 's2', 'c2')));
      await runs.executed(3);
      expect(s2.status).toBe('queued');
      expect(runs.texts()).toEqual(['x1', 'x2', 's1']);
      runs.executing[2]!.finish();
      await runs.executed(4);
      expect(runs.texts().at(-1)).toBe('s2');
      for (const e of runs.executing.slice(0, 2)) e.finish();
      runs.executing[3]!.finish();
      await Promise.all([s1.done, s2.done]);
      await dispatcher.drain();
    },
  );

  it(
    'the host-wide concurrency limit holds runs of other bindings back; the host-wide queue limit refuses ' +
      'beyond it',
    async () => {
      const { h, runs, dispatcher } = setUp({ maxConcurrentRuns: 1, maxQueuedRuns: 1 });
      hosts.push(h);
      await dispatcher.dispatch(event('other', 'first'));
      const waiting = ticket(await dispatcher.dispatch(event('q', 'second')));
      expect(waiting.status).toBe('queued');
      const error = (await dispatcher.dispatch(event('serial', 'third')).catch((e: unknown) => e)) as HostError;
      expect(error.code).toBe('DISPATCH_REFUSED');
      expect(error.data.reason).toBe('queue_full');
      await runs.executed(1);
      runs.executing[0]!.finish();
      await runs.executed(2);
      expect(runs.texts()).toEqual(['first', 'second']);
      runs.executing[1]!.finish();
      await dispatcher.drain();
    },
  );

  it('a full session queue refuses the next message (queue_full), audited', async () => {
    const { h, runs, dispatcher } = setUp();
    hosts.push(h);
    await dispatcher.dispatch(event('q', 'one'));
    await dispatcher.dispatch(event('q', 'two'));
    const error = (await dispatcher.dispatch(event('q', 'three')).catch((e: unknown) => e)) as HostError;
    expect(error.data).toMatchObject({ reason: 'queue_full', bindingId: 'q' });
    expect(
      h.store.audit
        .records()
        .filter((r) => r.type === 'dispatch.refused')
        .at(-1)!.data,
    ).toMatchObject({ reason: 'queue_full', bindingId: 'q' });
    await runs.executed(1);
    runs.executing[0]!.finish();
    await runs.executed(2);
    runs.executing[1]!.finish();
    await dispatcher.drain();
    expect(runs.texts()).toEqual(['one', 'two']);
  });

  it(
    "the session bound holds between a run's end and the end of its teardown: the claim is released, but the " +
      'next message still waits, and one more is refused',
    async () => {
      const { h, runs, dispatcher } = setUp();
      hosts.push(h);
      const first = ticket(await dispatcher.dispatch(event('q', 'one')));
      await runs.executed(1);
      const endTeardown = runs.executing[0]!.endHoldingTeardown();
      // The end is stored (no claim left), the teardown is not over: the next message waits.
      expect(dbOf(h.store).prepare('SELECT count(*) FROM run_claims').pluck().get()).toBe(0);
      const second = ticket(await dispatcher.dispatch(event('q', 'two')));
      expect(second.status).toBe('queued');
      const error = (await dispatcher.dispatch(event('q', 'three')).catch((e: unknown) => e)) as HostError;
      expect(error).toBeInstanceOf(HostError);
      expect(error.data).toMatchObject({ reason: 'queue_full', bindingId: 'q' });
      expect(error.message).toContain('already has 1 message(s) waiting');
      endTeardown();
      expect((await first.done).status).toBe('completed');
      await runs.executed(2);
      expect(runs.texts()).toEqual(['one', 'two']);
      runs.executing[1]!.finish();
      await dispatcher.drain();
    },
  );

  it('the session bound holds while its waiting run waits for its binding (no claim in the session)', async () => {
    const { h, runs, dispatcher } = setUp();
    hosts.push(h);
    await dispatcher.dispatch(event('q-serial', 'elsewhere', 'c0'));
    await runs.executed(1);
    // c1's first run waits for the binding's only slot: nothing of c1 is claimed, one message waits.
    expect(ticket(await dispatcher.dispatch(event('q-serial', 'one', 'c1'))).status).toBe('queued');
    const error = (await dispatcher.dispatch(event('q-serial', 'two', 'c1')).catch((e: unknown) => e)) as HostError;
    expect(error.data).toMatchObject({ reason: 'queue_full', bindingId: 'q-serial' });
    runs.executing[0]!.finish();
    await runs.executed(2);
    runs.executing[1]!.finish();
    await dispatcher.drain();
  });

  it('a planning refusal is a dispatch refusal with the same reason and data, audited', async () => {
    const { h, runs, dispatcher } = setUp();
    hosts.push(h);
    // The fake run service plans for a machine without bwrap, through the one planning path.
    const noBwrap: MachineReport = { ...FAKE_FULL, bwrap: { available: false, why: 'fake: no bwrap' } };
    runs.plan = (request) =>
      planRun({ config: h.config, store: h.store, redactor: h.redactor, machine: () => noBwrap }, request);
    const error = (await dispatcher.dispatch(event('jail', 'x')).catch((e: unknown) => e)) as HostError;
    expect(error.code).toBe('DISPATCH_REFUSED');
    expect(error.data).toEqual({ reason: 'sandbox_unavailable', bindingId: 'jail' });
    const nobody = (await dispatcher.dispatch(event('nobody', 'x')).catch((e: unknown) => e)) as HostError;
    expect(nobody.data).toEqual({ reason: 'no_binding' });
    expect(
      h.store.audit
        .records()
        .filter((r) => r.type === 'dispatch.refused')
        .map((r) => (r.data as { reason: string }).reason),
    ).toEqual(['sandbox_unavailable', 'no_binding']);
    expect(runs.executing).toEqual([]);
  });

  it('cancel: a waiting run is abandoned and never executes; an active run gets its signal aborted', async () => {
    const { h, runs, dispatcher } = setUp();
    hosts.push(h);
    const a = ticket(await dispatcher.dispatch(event('q', 'active')));
    const b = ticket(await dispatcher.dispatch(event('q', 'waiting')));
    expect(dispatcher.cancel(b.runId, 'changed my mind')).toBe(true);
    expect(await b.done).toMatchObject({ status: 'cancelled', reason: 'changed my mind' });
    expect(runs.abandoned).toEqual([{ runId: b.runId, reason: 'changed my mind', status: 'cancelled' }]);
    await runs.executed(1);
    expect(dispatcher.cancel(a.runId, 'stop')).toBe(true);
    expect(runs.executing[0]!.signal.aborted).toBe(true);
    runs.executing[0]!.finish('cancelled');
    expect((await a.done).status).toBe('cancelled');
    expect(dispatcher.cancel(a.runId, 'again')).toBe(false);
    expect(runs.texts()).toEqual(['active']);
  });

  it('cancelAll after a lost lease: a waiting run whose end is refused still leaves, and drain resolves', async () => {
    const { h, runs, dispatcher } = setUp();
    hosts.push(h);
    // Two sessions, each with a running run and a message waiting behind it (the paused host of a takeover).
    const active = [ticket(await dispatcher.dispatch(event('q', 'a1', 'c1')))];
    active.push(ticket(await dispatcher.dispatch(event('q', 'a2', 'c2'))));
    const waiting = [ticket(await dispatcher.dispatch(event('q', 'w1', 'c1')))];
    waiting.push(ticket(await dispatcher.dispatch(event('q', 'w2', 'c2'))));
    await runs.executed(2);
    runs.refuseAbandon = new HostError('LEASE_LOST', 'host h (epoch 1) lost its lease: host g/1 took its runs over');
    dispatcher.cancelAll('lease lost');
    for (const w of waiting)
      expect(await w.done).toMatchObject({
        status: 'cancelled',
        reason: expect.stringMatching(/^lease lost \(its end/),
      });
    expect(runs.executing.map((e) => e.signal.aborted)).toEqual([true, true]);
    for (const e of runs.executing) e.fail(new Error('its end refused too'));
    await dispatcher.drain(); // once hung here: the waiting runs were out of their queues but still held
    for (const a of active) expect((await a.done).status).toBe('failed');
    // A second stop signal cancels again: nothing is held, nothing throws (once: a TypeError on the gone session).
    expect(() => dispatcher.cancelAll('again')).not.toThrow();
    for (const w of waiting) expect(dispatcher.cancel(w.runId, 'again')).toBe(false);
    expect(runs.texts()).toEqual(['a1', 'a2']);
  });

  it('a run whose execute throws is ended as failed (never reached its runner) and the next one starts', async () => {
    const { h, runs, dispatcher } = setUp();
    hosts.push(h);
    const a = ticket(await dispatcher.dispatch(event('q', 'broken')));
    const b = ticket(await dispatcher.dispatch(event('q', 'fine')));
    await runs.executed(1);
    runs.executing[0]!.fail(new Error('fake: its entry failed to build'));
    expect(await a.done).toMatchObject({
      status: 'failed',
      reason: 'the run could not start: fake: its entry failed to build',
    });
    expect(runs.abandoned).toEqual([
      { runId: a.runId, reason: 'the run could not start: fake: its entry failed to build', status: 'failed' },
    ]);
    await runs.executed(2);
    runs.executing[1]!.finish();
    expect((await b.done).status).toBe('completed');
  });

  it('a failed start the store refused at first is recorded once it takes it; the next run starts', async () => {
    const { h, runs, dispatcher } = setUp();
    hosts.push(h);
    const a = ticket(await dispatcher.dispatch(event('q', 'broken')));
    const b = ticket(await dispatcher.dispatch(event('q', 'next')));
    await runs.executed(1);
    // A fake of a store outage: its recording refused twice, as a restarting database refuses it (outside attack 7).
    runs.refuseAbandon = new HostError('STATE_UNAVAILABLE', 'fake: the store is restarting');
    runs.refuseAbandonTimes = 2;
    runs.executing[0]!.fail(new Error('fake: the connection was lost at COMMIT'));
    expect(await a.done).toMatchObject({ status: 'failed' });
    expect(h.store.run(a.runId)).toMatchObject({ status: 'failed' });
    expect(runs.refuseAbandonTimes).toBe(0);
    expect(runs.abandoned).toEqual([
      { runId: a.runId, reason: 'the run could not start: fake: the connection was lost at COMMIT', status: 'failed' },
    ]);
    // Its claim went with its end: the next run of the conversation starts (once it waited for ever).
    await runs.executed(2);
    runs.executing[1]!.finish();
    expect((await b.done).status).toBe('completed');
  });

  it('a waiting run cancelled while the store is away never starts; its end is recorded once it can be', async () => {
    const { h, runs, dispatcher } = setUp();
    hosts.push(h);
    const first = ticket(await dispatcher.dispatch(event('other', 'first')));
    const second = ticket(await dispatcher.dispatch(event('other', 'second')));
    const third = ticket(await dispatcher.dispatch(event('other', 'third')));
    await runs.executed(1);
    // A fake of a store outage: the cancel's record refused once.
    runs.refuseAbandon = new HostError('STATE_UNAVAILABLE', 'fake: the store is restarting');
    runs.refuseAbandonTimes = 1;
    expect(dispatcher.cancel(second.runId, 'not wanted')).toBe(true);
    expect(h.store.run(second.runId)).toMatchObject({ status: 'queued' });
    // Its turn comes: it is not started, its end is recorded, and the run behind it starts.
    runs.executing[0]!.finish();
    expect(await second.done).toMatchObject({ status: 'cancelled', reason: 'not wanted' });
    expect(h.store.run(second.runId)).toMatchObject({ status: 'cancelled' });
    await runs.executed(2);
    expect(runs.texts()).toEqual(['first', 'third']);
    runs.executing[1]!.finish();
    expect((await first.done).status).toBe('completed');
    expect((await third.done).status).toBe('completed');
  });

  it('a redelivered event id is a duplicate of the first ticket: queued once', async () => {
    const { h, runs, dispatcher } = setUp();
    hosts.push(h);
    const first = ticket(await dispatcher.dispatch(event('other', 'once', 'c1', 'evt-dup-1')));
    const again = await dispatcher.dispatch(event('other', 'once', 'c1', 'evt-dup-1'));
    expect(again).toEqual({ status: 'duplicate', runId: first.runId, sessionId: first.sessionId, bindingId: 'other' });
    await runs.executed(1);
    runs.executing[0]!.finish();
    await dispatcher.drain();
    expect(runs.texts()).toEqual(['once']);
  });

  it(
    'steering "restart": a new message cancels the active run and the waiting ones; it runs with the next goal ' +
      'revision',
    async () => {
      const { h, runs, dispatcher } = setUp();
      hosts.push(h);
      const a = ticket(await dispatcher.dispatch(event('steer', 'first')));
      await runs.executed(1);
      const b = ticket(await dispatcher.dispatch(event('steer', 'second')));
      expect(runs.executing[0]!.signal.aborted).toBe(true);
      runs.executing[0]!.finish('cancelled');
      await a.done;
      await runs.executed(2);
      expect(runs.executing[1]!.queued.goalRevision).toBe(runs.executing[0]!.queued.goalRevision + 1);
      runs.executing[1]!.finish();
      expect((await b.done).status).toBe('completed');
    },
  );

  /** A run of binding `other` waits behind an active one; the admin applies `change`; the active one ends. */
  async function changedWhileWaiting(change: Record<string, unknown>) {
    const { h, runs, dispatcher } = setUp();
    hosts.push(h);
    await dispatcher.dispatch(event('other', 'active'));
    const waiting = ticket(await dispatcher.dispatch(event('other', 'waiting')));
    h.apply({ bindings: [{ id: 'other', runner: 'echo', sandbox: 'process', route: { bot: 'other' }, ...change }] });
    await runs.executed(1);
    runs.executing[0]!.finish();
    return { h, runs, waiting };
  }

  it('a binding disabled while its run waits: the run is abandoned when its turn comes', async () => {
    const { runs, waiting } = await changedWhileWaiting({ enabled: false });
    expect(await waiting.done).toMatchObject({
      status: 'cancelled',
      reason: 'binding "other" was disabled before the run started',
    });
    expect(runs.texts()).toEqual(['active']);
  });

  it('a grant revoked while a run waits: the run starts with the access planned at its start', async () => {
    const { h, runs, dispatcher } = setUp();
    hosts.push(h);
    const hist = { id: 'hist', runner: 'echo', sandbox: 'process', route: { bot: 'hist' } };
    h.apply({ bindings: [{ ...hist, grants: { history: { messages: 5 } } }] });
    await dispatcher.dispatch(event('hist', 'active'));
    const waiting = ticket(await dispatcher.dispatch(event('hist', 'waiting')));
    await runs.executed(1);
    expect(runs.executing[0]!.plan.access.history).toEqual({ messages: 5 });
    h.apply({ bindings: [hist] }); // `paddock apply` without the grant
    runs.executing[0]!.finish();
    await runs.executed(2);
    expect(runs.executing[1]!.queued.runId).toBe(waiting.runId);
    expect(runs.executing[1]!.plan.access.history).toBe('none');
    runs.executing[1]!.finish();
    expect((await waiting.done).status).toBe('completed');
  });

  it('a waiting run its binding no longer routes is refused at its start, with the planning code', async () => {
    // The admin moves the binding to another bot: the queued message is no longer this binding's.
    const { h, runs, waiting } = await changedWhileWaiting({ route: { bot: 'moved' } });
    const outcome = await waiting.done;
    expect(outcome.status).toBe('cancelled');
    expect(outcome.reason).toMatch(/^refused before it started \(no_binding\): binding "other" no longer routes /);
    expect(runs.abandoned).toEqual([{ runId: waiting.runId, reason: outcome.reason, status: 'cancelled' }]);
    expect(runs.texts()).toEqual(['active']);
    const ended = h.store
      .readEvents(waiting.sessionId)
      .filter((e) => e.type === 'run.ended' && e.runId === waiting.runId);
    expect(ended).toHaveLength(1);
  });
});

describe('Dispatcher: the per-tenant bound on waiting runs', () => {
  it(
    "a tenant at its bound is refused queue_full naming its queue, in any new conversation; another tenant's " +
      'events are still queued; running runs do not count; a run that would start at once is never refused',
    async () => {
      const { h, runs, dispatcher } = setUp({ maxQueuedRunsPerTenant: 2 });
      hosts.push(h);
      const base = { runner: 'echo', sandbox: 'process' };
      h.apply({
        bindings: [
          // One run at a time: every new conversation waits behind the first (the attack's flood).
          { id: 'acme-one', tenant: 'acme', ...base, route: { bot: 'acme-one' }, limits: { maxConcurrentRuns: 1 } },
          { id: 'acme-wide', tenant: 'acme', ...base, route: { bot: 'acme-wide' } },
          { id: 'beta-one', tenant: 'beta', ...base, route: { bot: 'beta-one' }, limits: { maxConcurrentRuns: 1 } },
        ],
      });
      const acme = (bot: string, conversation: string) =>
        dispatcher.dispatch(event(bot, conversation, conversation), {}, { tenant: 'acme' });
      const beta = (conversation: string) =>
        dispatcher.dispatch(event('beta-one', conversation, conversation), {}, { tenant: 'beta' });
      const flood = [await acme('acme-one', 'a1'), await acme('acme-one', 'a2'), await acme('acme-one', 'a3')];
      expect(flood.map((t) => t.status)).toEqual(['started', 'queued', 'queued']);
      const over = (await acme('acme-one', 'a4').catch((e: unknown) => e)) as HostError;
      expect(over).toBeInstanceOf(HostError);
      expect(over.data).toMatchObject({ reason: 'queue_full', bindingId: 'acme-one' });
      expect(over.message).toBe(
        'tenant "acme" already has 2 runs waiting (the most one tenant may queue on this host); retry when some ' +
          'have started',
      );
      const audited = h.store.audit.records({ types: ['dispatch.refused'] }).at(-1)!;
      expect(audited.data).toMatchObject({ reason: 'queue_full', tenant: 'acme', bindingId: 'acme-one' });
      // A second dispatcher on the same store (as another host process would be) sees the same count.
      const other = new Dispatcher(h.config, log, h.store, runs, h.redactor);
      expect(
        (
          (await other
            .dispatch(event('acme-one', 'a5', 'a5'), {}, { tenant: 'acme' })
            .catch((e: unknown) => e)) as HostError
        ).data,
      ).toMatchObject({ reason: 'queue_full' });
      // beta is not behind acme's bound: its own run starts, and its own queue takes two more.
      const b = [await beta('b1'), await beta('b2'), await beta('b3')];
      expect(b.map((t) => t.status)).toEqual(['started', 'queued', 'queued']);
      expect(((await beta('b4').catch((e: unknown) => e)) as HostError).data).toMatchObject({ reason: 'queue_full' });
      // A run of acme's that would start at once (a free binding and host slot) does not add to the queue.
      expect((await acme('acme-wide', 'w1')).status).toBe('started');
      await runs.executed(3);
      // Running runs do not count: once a1 ends, a2 runs, one acme run waits and a new one is taken.
      runs.executing.find((e) => e.text === 'a1')!.finish();
      await runs.executed(4);
      expect(runs.texts()).toContain('a2');
      expect((await acme('acme-one', 'a6')).status).toBe('queued');
      for (const name of ['a2', 'b1', 'w1']) runs.executing.find((e) => e.text === name)!.finish();
      await runs.executed(6);
      for (const name of ['a3', 'b2']) runs.executing.find((e) => e.text === name)!.finish();
      await runs.executed(8);
      for (const name of ['a6', 'b3']) runs.executing.find((e) => e.text === name)!.finish();
      await dispatcher.drain();
    },
  );
});

describe("Dispatcher: the tenant's and the host's bounds at a run's end", () => {
  it.each([
    ['tenant', { maxQueuedRunsPerTenant: 1 }, 'tenant "default" already has 1 runs waiting'],
    ['host', { maxQueuedRuns: 1 }, 'this host already has 1 runs waiting'],
  ])(
    "the %s bound counts a run that waits behind its session's teardown (no claim left) as one that would wait",
    async (_name, limits, message) => {
      const { h, runs, dispatcher } = setUp(limits);
      hosts.push(h);
      await dispatcher.dispatch(event('other', 'one'));
      await runs.executed(1);
      const endTeardown = runs.executing[0]!.endHoldingTeardown();
      expect(ticket(await dispatcher.dispatch(event('other', 'two'))).status).toBe('queued');
      const error = (await dispatcher.dispatch(event('other', 'three')).catch((e: unknown) => e)) as HostError;
      expect(error).toBeInstanceOf(HostError);
      expect(error.data).toMatchObject({ reason: 'queue_full' });
      expect(error.message).toContain(message);
      endTeardown();
      await runs.executed(2);
      runs.executing[1]!.finish();
      await dispatcher.drain();
    },
  );
});

describe('Dispatcher tenancy at dequeue', () => {
  it(
    'a queued run is planned again at its start for the tenant it was dispatched for: a binding moved to ' +
      'another tenant meanwhile refuses it, never runs it for the new tenant',
    async () => {
      const { h, runs, dispatcher } = setUp();
      hosts.push(h);
      const base = { runner: 'echo', sandbox: 'process' };
      h.apply({ bindings: [{ id: 'acme-q', tenant: 'acme', ...base, route: { bot: 'acme-q' } }] });
      const first = ticket(await dispatcher.dispatch(event('acme-q', 'one'), {}, { tenant: 'acme' }));
      const second = ticket(await dispatcher.dispatch(event('acme-q', 'two'), {}, { tenant: 'acme' }));
      expect(second.status).toBe('queued');
      await runs.executed(1);
      // While "two" waits, the admin moves the binding to beta.
      h.apply({ bindings: [{ id: 'acme-q', tenant: 'beta', ...base, route: { bot: 'acme-q' } }] });
      runs.executing[0]!.finish();
      const outcome = await second.done;
      expect(outcome.status).toBe('cancelled');
      // From acme's side the binding no longer exists: the reason says nothing of beta.
      expect(outcome.reason).toBe('refused before it started (no_binding): binding "acme-q" no longer exists');
      expect(runs.texts()).toEqual(['one']);
      await first.done;
      // beta's own event for the moved binding runs in a new beta session.
      const beta = ticket(await dispatcher.dispatch(event('acme-q', 'three'), {}, { tenant: 'beta' }));
      expect(beta.sessionId).not.toBe(first.sessionId);
      await runs.executed(2);
      runs.executing[1]!.finish();
      await dispatcher.drain();
    },
  );
});
