import { mkdtempSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigRepo } from '../../host/bindings/configRepo.js';
import type { DispatchTicket } from '../../host/dispatch/dispatcher.js';
import { requestCancel } from '../../host/dispatch/runControls.js';
import { HostError } from '../../host/errors.js';
import { probeMachine } from '../../host/sandbox/probe.js';
import { Store } from '../../host/state/store.js';
import { chatEvent, tempHost } from '../helpers/host.js';

/** The test's end of the rendezvous fixture: runs connect and wait until the test says "go". */
function rendezvous() {
  const path = join(mkdtempSync(join(tmpdir(), 'paddock-rv-')), 'rv.sock');
  const arrivals: { runId: string; text: string; socket: Socket }[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  const server = createServer((socket) => {
    let buffered = '';
    socket.on('data', (chunk) => {
      buffered += chunk.toString();
      if (!buffered.includes('\n')) return;
      const [runId, ...words] = buffered.trim().split(' ');
      arrivals.push({ runId: runId!, text: words.join(' '), socket });
      for (const w of waiters.filter((x) => arrivals.length >= x.n)) w.resolve();
    });
    socket.on('error', () => undefined);
  }).listen(path);
  return {
    path,
    arrivals,
    /** Resolves when `n` runs have connected in total. */
    arrived: (n: number) =>
      new Promise<void>((resolve) => (arrivals.length >= n ? resolve() : waiters.push({ n, resolve }))),
    go: (i: number) => arrivals[i]!.socket.write('go\n'),
    close: () => server.close(),
  };
}

const started = (t: DispatchTicket) => {
  if (t.status === 'duplicate') throw new Error('unexpected duplicate');
  return t;
};

const rv = rendezvous();
const host = tempHost({ maxConcurrentRuns: 4 });
// The rendezvous socket lives on the host, so these bindings use the process backend.
const base = {
  runner: 'waits-for-go',
  sandbox: 'process',
  config: { socket: rv.path },
  limits: { wallClockMs: 20_000 },
};
host.apply({
  bindings: [
    {
      id: 'team',
      ...base,
      route: { platform: 'telegram', bot: 'team' },
      limits: { ...base.limits, maxConcurrentRuns: 2, maxQueued: 1 },
    },
    { id: 'team-vip', ...base, route: { platform: 'telegram', bot: 'team', conversation: { id: 'vip' } } },
    {
      id: 'serial',
      ...base,
      route: { platform: 'telegram', bot: 'serial' },
      limits: { ...base.limits, maxConcurrentRuns: 1 },
    },
    { id: 'steer', ...base, route: { platform: 'telegram', bot: 'steer' }, steering: 'restart' },
    { id: 'jailed', ...base, route: { platform: 'telegram', bot: 'jailed' }, sandbox: 'bwrap' },
  ],
});
afterAll(async () => {
  rv.close();
  await host.close();
});

const eventsOf = (sessionId: string) => host.store.readEvents(sessionId);
const seqOf = (sessionId: string, type: string, runId: string) =>
  eventsOf(sessionId).find((e) => e.type === type && e.runId === runId)!.seq;

describe('dispatch (real store, real runner processes)', () => {
  it('two messages of one conversation run one after the other; the second waits in the queue', async () => {
    const before = rv.arrivals.length;
    const a = started(
      await host.dispatcher.dispatch(chatEvent({ bot: 'team', conversation: { id: 'c-serial' }, text: 'first' })),
    );
    const b = started(
      await host.dispatcher.dispatch(chatEvent({ bot: 'team', conversation: { id: 'c-serial' }, text: 'second' })),
    );
    expect(a.status).toBe('started');
    expect(b).toMatchObject({ status: 'queued', position: 1, sessionId: a.sessionId });
    await rv.arrived(before + 1);
    expect(rv.arrivals[before]!.runId).toBe(a.runId);
    rv.go(before);
    expect((await a.done).status).toBe('completed');
    await rv.arrived(before + 2);
    expect(rv.arrivals[before + 1]!.runId).toBe(b.runId); // only now did the second run start
    rv.go(before + 1);
    expect((await b.done).status).toBe('completed');
    expect(seqOf(a.sessionId, 'run.ended', a.runId)).toBeLessThan(seqOf(a.sessionId, 'run.started', b.runId));
  });

  it('messages of two conversations run in parallel: both are connected before either may finish', async () => {
    const before = rv.arrivals.length;
    const a = started(await host.dispatcher.dispatch(chatEvent({ bot: 'team', conversation: { id: 'p1' } })));
    const b = started(await host.dispatcher.dispatch(chatEvent({ bot: 'team', conversation: { id: 'p2' } })));
    expect([a.status, b.status]).toEqual(['started', 'started']);
    expect(a.sessionId).not.toBe(b.sessionId);
    await rv.arrived(before + 2); // would never happen if the runs were serialised (the first would time out)
    rv.go(before);
    rv.go(before + 1);
    expect((await a.done).status).toBe('completed');
    expect((await b.done).status).toBe('completed');
  });

  it('a binding at its concurrency limit queues runs of other conversations', async () => {
    const before = rv.arrivals.length;
    const a = started(await host.dispatcher.dispatch(chatEvent({ bot: 'serial', conversation: { id: 's1' } })));
    const b = started(await host.dispatcher.dispatch(chatEvent({ bot: 'serial', conversation: { id: 's2' } })));
    expect([a.status, b.status]).toEqual(['started', 'queued']);
    await rv.arrived(before + 1);
    rv.go(before);
    await a.done;
    await rv.arrived(before + 2);
    rv.go(before + 1);
    expect((await b.done).status).toBe('completed');
  });

  it(
    'a redelivered event id starts no second run, even through another dispatcher with its own connection to ' +
      'the same data',
    async () => {
      const before = rv.arrivals.length;
      const event = chatEvent({ bot: 'team', conversation: { id: 'dedupe' } });
      const first = started(await host.dispatcher.dispatch(event));
      const again = await host.dispatcher.dispatch({
        ...event,
        message: { parts: [{ type: 'text', text: 'changed' }] },
      });
      expect(again).toEqual({ status: 'duplicate', runId: first.runId, sessionId: first.sessionId, bindingId: 'team' });
      await rv.arrived(before + 1);
      rv.go(before);
      await first.done;
      const second = Store.open({ dataDir: host.dataDir });
      const { Dispatcher } = await import('../../host/dispatch/dispatcher.js');
      const { RunService } = await import('../../host/runs/runService.js');
      const { pino } = await import('pino');
      const log = pino({ level: 'silent' });
      const { Redactor } = await import('../../host/secrets/redactor.js');
      const redactor = new Redactor();
      const { Gateway } = await import('../../host/gateway/gateway.js');
      const gateway = new Gateway({ store: second, redactor, log, dataDir: host.dataDir });
      const dispatcher = new Dispatcher(
        host.config,
        log,
        second,
        new RunService(host.config, log, second, redactor, gateway),
        redactor,
      );
      expect(await dispatcher.dispatch(event)).toMatchObject({ status: 'duplicate', runId: first.runId });
      second.close();
      expect(host.store.runs({ limit: 1000 }).filter((r) => r.sessionId === first.sessionId)).toHaveLength(1);
    },
  );

  it('a malformed event is refused naming the field, and the refusal is audited', async () => {
    const bad = { ...chatEvent({ bot: 'team' }), conversation: { type: 'group' } };
    const error = await host.dispatcher.dispatch(bad).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HostError);
    expect((error as HostError).code).toBe('INVALID_INPUT');
    expect((error as HostError).message).toMatch(/^event\.conversation\.id: /);
    const notJson = await host.dispatcher.dispatch('hello').catch((e: unknown) => e);
    expect((notJson as HostError).message).toMatch(/^event: /);
    const refusals = host.store.audit
      .records({ types: ['dispatch.refused'] })
      .filter((r) => (r.data as { eventId: string }).eventId === bad.id);
    expect(refusals).toHaveLength(1);
    expect((refusals[0]!.data as { reason: string }).reason).toBe('invalid_event');
  });

  it(
    'routes to the most specific binding; an event no binding ' + 'routes is refused with a reason and audited',
    async () => {
      const before = rv.arrivals.length;
      const vip = started(await host.dispatcher.dispatch(chatEvent({ bot: 'team', conversation: { id: 'vip' } })));
      expect(vip.bindingId).toBe('team-vip');
      await rv.arrived(before + 1);
      rv.go(before);
      await vip.done;
      const stray = chatEvent({ bot: 'nobody' });
      const error = (await host.dispatcher.dispatch(stray).catch((e: unknown) => e)) as HostError;
      expect(error.code).toBe('DISPATCH_REFUSED');
      expect(error.data.reason).toBe('no_binding');
      expect(error.message).toContain('telegram/nobody/group:c1');
      const audited = host.store.audit
        .records({ types: ['dispatch.refused'] })
        .find((r) => (r.data as { eventId: string }).eventId === stray.id)!;
      expect(audited.actor).toBe('platform:telegram');
      expect((audited.data as { reason: string }).reason).toBe('no_binding');
    },
  );

  it('a full session queue refuses the next message with a reason', async () => {
    const before = rv.arrivals.length;
    const conv = { id: 'busy' };
    const a = started(await host.dispatcher.dispatch(chatEvent({ bot: 'team', conversation: conv })));
    const b = started(await host.dispatcher.dispatch(chatEvent({ bot: 'team', conversation: conv })));
    expect(b.status).toBe('queued');
    const error = (await host.dispatcher
      .dispatch(chatEvent({ bot: 'team', conversation: conv }))
      .catch((e: unknown) => e)) as HostError;
    expect(error.data.reason).toBe('queue_full');
    expect(error.message).toMatch(/allows 1/);
    await rv.arrived(before + 1);
    rv.go(before);
    await a.done;
    await rv.arrived(before + 2);
    rv.go(before + 1);
    await b.done;
  });

  it('steering "restart": a new message cancels the active run and runs with the next goal revision', async () => {
    const before = rv.arrivals.length;
    const a = started(await host.dispatcher.dispatch(chatEvent({ bot: 'steer', text: 'do X' })));
    await rv.arrived(before + 1);
    const b = started(await host.dispatcher.dispatch(chatEvent({ bot: 'steer', text: 'no, do Y' })));
    const outcomeA = await a.done;
    expect(outcomeA.status).toBe('cancelled');
    await rv.arrived(before + 2);
    expect(rv.arrivals[before + 1]!.text).toBe('no, do Y');
    rv.go(before + 1);
    expect((await b.done).status).toBe('completed');
    const queued = eventsOf(b.sessionId).filter((e) => e.type === 'run.queued');
    expect(queued.map((e) => (e.data as { goalRevision: number }).goalRevision)).toEqual([0, 1]);
  });

  it(
    'disabling a binding refuses new runs at once; a cancel request from another connection stops its active ' + 'run',
    async () => {
      const before = rv.arrivals.length;
      host.apply({ bindings: [{ id: 'doomed', ...base, route: { platform: 'telegram', bot: 'doomed' } }] });
      const a = started(await host.dispatcher.dispatch(chatEvent({ bot: 'doomed' })));
      await rv.arrived(before + 1);
      // Another process (e.g. `paddock bindings disable doomed --cancel-active`) writes through its own connection.
      const admin = Store.open({ dataDir: host.dataDir });
      const repo = new ConfigRepo(admin);
      repo.put('binding', 'doomed', { ...repo.binding('doomed').spec, enabled: false }, 'user:test');
      requestCancel(
        admin,
        admin.runs({ status: ['queued', 'running'], bindingId: 'doomed' }).map((r) => r.id),
        'binding doomed was disabled',
        'user:test',
      );
      admin.close();
      const outcome = await a.done;
      expect(outcome.status).toBe('cancelled');
      const error = (await host.dispatcher
        .dispatch(chatEvent({ bot: 'doomed' }))
        .catch((e: unknown) => e)) as HostError;
      expect(error.data.reason).toBe('binding_disabled');
    },
  );

  it('a binding asking for a sandbox this host cannot run is refused, not run less isolated', async () => {
    // This host has bwrap; point the host at a bwrap that does not exist to see the refusal.
    process.env.PADDOCK_BWRAP = '/nonexistent/bwrap';
    probeMachine(true);
    try {
      const error = (await host.dispatcher
        .dispatch(chatEvent({ bot: 'jailed' }))
        .catch((e: unknown) => e)) as HostError;
      expect(error.data.reason).toBe('sandbox_unavailable');
      expect(error.message).toMatch(/asks for the bwrap sandbox, which this host cannot run/);
    } finally {
      delete process.env.PADDOCK_BWRAP;
      probeMachine(true);
    }
  });
});

describe('host-wide dispatch limits', () => {
  const rv2 = rendezvous();
  const small = tempHost({ maxConcurrentRuns: 1, maxQueuedRuns: 1 });
  small.apply({
    bindings: [
      {
        id: 'x',
        runner: 'waits-for-go',
        sandbox: 'process',
        config: { socket: rv2.path },
        route: { platform: 'telegram', bot: 'x' },
      },
      {
        id: 'y',
        runner: 'waits-for-go',
        sandbox: 'process',
        config: { socket: rv2.path },
        route: { platform: 'telegram', bot: 'y' },
      },
    ],
  });
  afterAll(async () => {
    rv2.close();
    await small.close();
  });

  it(
    'the host-wide concurrency limit holds runs of other bindings back; the host-wide queue limit refuses ' +
      'beyond it',
    async () => {
      const a = started(await small.dispatcher.dispatch(chatEvent({ bot: 'x' })));
      const b = started(await small.dispatcher.dispatch(chatEvent({ bot: 'y' })));
      expect([a.status, b.status]).toEqual(['started', 'queued']);
      const error = (await small.dispatcher
        .dispatch(chatEvent({ bot: 'y', conversation: { id: 'other' } }))
        .catch((e: unknown) => e)) as HostError;
      expect(error.data.reason).toBe('queue_full');
      expect(error.message).toMatch(/this host already has 1 runs waiting/);
      await rv2.arrived(1);
      expect(rv2.arrivals[0]!.runId).toBe(a.runId);
      rv2.go(0);
      await a.done;
      await rv2.arrived(2);
      expect(rv2.arrivals[1]!.runId).toBe(b.runId);
      rv2.go(1);
      expect((await b.done).status).toBe('completed');
    },
  );
});
