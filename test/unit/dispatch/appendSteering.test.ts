// Steering `append` in the dispatcher (host/dispatch/dispatcher.ts): where a message of a session with a live run goes.
// Real planning, queueing, journal and store; the run's runner is a test-controlled inbox (its answers and timing).
import { afterAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { Dispatcher, type DispatchTicket } from '../../../host/dispatch/dispatcher.js';
import { notStartedOutcome, type RunOutcome } from '../../../host/process/outcome.js';
import { RunJournal, type QueuedRun } from '../../../host/runs/journal.js';
import { planRun, type RunPlan } from '../../../host/runs/plan.js';
import type { RunHooks } from '../../../host/runs/runService.js';
import type { RunInbox } from '../../../host/runs/runInbox.js';
import type { ChatEvent, RunMessageResult } from '../../../sdk/protocol/types.js';
import { chatEvent, tempHost } from '../../helpers/host.js';
import { rawDb } from '../../helpers/rawDb.js';

const log = pino({ level: 'silent' });
const hosts: ReturnType<typeof tempHost>[] = [];
afterAll(async () => {
  for (const h of hosts) await h.close();
});

interface Running {
  queued: QueuedRun;
  text: string;
  hooks: RunHooks;
  /** Messages the run's runner was offered, in order, with the answer the test gives each. */
  offered: { text: string; answer(result: RunMessageResult): void }[];
  finish(): void;
}

/** The run service with real plan/queue/journal; `execute` opens an inbox only when `takesMessages`. */
function setUp(takesMessages: boolean) {
  const h = tempHost();
  hosts.push(h);
  h.apply({ bindings: [{ id: 'ap', runner: 'echo', sandbox: 'process', route: { bot: 'ap' }, steering: 'append' }] });
  const journal = new RunJournal(h.store, log, h.redactor);
  const running: Running[] = [];
  const offers: (() => void)[] = [];
  const runs = {
    plan: (request: { kind: 'dispatch'; event: ChatEvent; tenant: string; bindingId?: string }): RunPlan =>
      planRun({ config: h.config, store: h.store, redactor: h.redactor }, request),
    queue: (plan: RunPlan, event: ChatEvent, sessionId: string, goalRevision: number) =>
      journal.queued(plan, event, sessionId, goalRevision),
    abandon: (run: QueuedRun, reason: string) => journal.abandon(run, reason),
    execute(queued: QueuedRun, plan: RunPlan, event: ChatEvent, hooks: RunHooks): Promise<RunOutcome> {
      const open = journal.open(queued, plan.runner.manifest.id);
      return new Promise<RunOutcome>((resolve) => {
        const run: Running = {
          queued,
          text: textOf(event),
          hooks,
          offered: [],
          finish: () => resolve(open.ended({ ...notStartedOutcome(queued.runId, 'done'), status: 'completed' })),
        };
        running.push(run);
        if (takesMessages) {
          const inbox: RunInbox = {
            runId: queued.runId,
            deliver: (message, record) =>
              new Promise<RunMessageResult>((answer) => {
                run.offered.push({
                  text: textOf(message),
                  answer: (result) => {
                    if (result.accepted) open.appended(message, queued.goalRevision, record);
                    answer(result);
                  },
                });
                offers.splice(0).forEach((wake) => wake());
              }),
          };
          hooks.onInbox?.(inbox);
        }
      });
    },
  };
  const dispatcher = new Dispatcher(h.config, log, h.store, runs, h.redactor);
  /** A second dispatcher on the same store: as another host process on the data folder sees this one's runs. */
  const another = () => new Dispatcher(h.config, log, h.store, runs, h.redactor);
  const started = (n: number) =>
    new Promise<Running>((resolve) => {
      const check = () => (running.length >= n ? resolve(running[n - 1]!) : setImmediate(check));
      check();
    });
  const offered = (run: Running, n: number) =>
    new Promise<Running['offered'][number]>((resolve) => {
      const check = () => (run.offered.length >= n ? resolve(run.offered[n - 1]!) : offers.push(check));
      check();
    });
  return { h, dispatcher, another, running, started, offered };
}
const textOf = (e: ChatEvent) => (e.message.parts[0] as { text: string }).text;
const send = (d: Dispatcher, text: string, id?: string) => d.dispatch(chatEvent({ bot: 'ap', text, id }));
const live = (t: DispatchTicket) => {
  if (t.status === 'duplicate') throw new Error('unexpected duplicate');
  return t;
};

describe('steering append: the dispatcher', () => {
  it('a message its running runner takes is appended to that run: recorded in its events, no new run', async () => {
    const { h, dispatcher, running, started, offered } = setUp(true);
    const first = live(await send(dispatcher, 'fix the bug'));
    const run = await started(1);
    const pending = send(dispatcher, 'and add a test', 'evt-append-1');
    (await offered(run, 1)).answer({ accepted: true });
    const appended = live(await pending);
    expect(appended).toMatchObject({ status: 'appended', runId: first.runId, sessionId: first.sessionId, position: 0 });
    expect(appended.notAppended).toBeUndefined();
    const messages = h.store.readEvents(first.sessionId).filter((e) => e.type === 'message.received');
    expect(messages.map((e) => [e.runId, (e.data as { appended?: unknown }).appended])).toEqual([
      [null, undefined],
      [first.runId, { goalRevision: 0 }], // the run's own revision: an append amends the goal, it is not a new one
    ]);
    expect(h.store.runs({ sessionId: first.sessionId }).length).toBe(1);
    // A redelivery is a duplicate of the run it was appended to, never offered again.
    expect(await send(dispatcher, 'and add a test', 'evt-append-1')).toMatchObject({
      status: 'duplicate',
      runId: first.runId,
    });
    expect(run.offered.length).toBe(1);
    const audited = rawDb(h.store)
      .prepare("SELECT run_id FROM audit WHERE type = 'message.appended'")
      .pluck()
      .all() as string[];
    expect(audited).toEqual([first.runId]);
    running[0]!.finish();
    expect((await appended.done).runId).toBe(first.runId);
  });

  it('a message the runner refuses becomes a queued run (nothing lost), with why it was not appended', async () => {
    const { dispatcher, started, offered } = setUp(true);
    const first = live(await send(dispatcher, 'one'));
    const run = await started(1);
    const pending = send(dispatcher, 'two');
    (await offered(run, 1)).answer({ accepted: false, reason: 'the harness has finished its last turn' });
    const second = live(await pending);
    expect(second).toMatchObject({ status: 'queued', position: 1 });
    expect(second.notAppended).toEqual({
      code: 'refused',
      message: `run ${first.runId} did not take it: the harness has finished its last turn`,
    });
    run.finish();
    const next = await started(2);
    expect(next.text).toBe('two');
    expect(next.queued.goalRevision).toBe(0);
    next.finish();
    await dispatcher.drain();
  });

  it('a runner that does not take messages during a run: the message is queued, "unsupported"', async () => {
    const { dispatcher, started } = setUp(false);
    await send(dispatcher, 'one');
    const run = await started(1);
    const second = live(await send(dispatcher, 'two'));
    expect(second.status).toBe('queued');
    expect(second.notAppended?.code).toBe('unsupported');
    run.finish();
    (await started(2)).finish();
    await dispatcher.drain();
  });

  it("order is kept: a message waits for the earlier one's answer; once one is queued the next queues", async () => {
    const { dispatcher, started, offered } = setUp(true);
    await send(dispatcher, 'one');
    const run = await started(1);
    const a = send(dispatcher, 'two');
    const b = send(dispatcher, 'three');
    const offerA = await offered(run, 1);
    // "three" is not offered while "two" waits for its answer: it could overtake it.
    await new Promise((resolve) => setImmediate(resolve));
    expect(run.offered.map((o) => o.text)).toEqual(['two']);
    offerA.answer({ accepted: false, reason: 'busy' });
    expect(live(await a).status).toBe('queued');
    const third = live(await b);
    expect(third.status).toBe('queued');
    expect(third.notAppended?.code).toBe('not_running'); // "two" waits before it: appending would reorder
    expect(run.offered.map((o) => o.text)).toEqual(['two']);
    run.finish();
    (await started(2)).finish();
    const last = await started(3);
    expect(last.text).toBe('three');
    last.finish();
    await dispatcher.drain();
  });

  it('no live run: an ordinary start, nothing to explain', async () => {
    const { dispatcher, started } = setUp(true);
    const first = live(await send(dispatcher, 'one'));
    expect(first.status).toBe('started');
    expect(first.notAppended).toBeUndefined();
    (await started(1)).finish();
    await dispatcher.drain();
  });
});
