// RunService.execute (host/runs/runService.ts): a run has exactly one `run.ended`, whatever step
// throws. Real host, real store, the built-in echo runner as a real process; the failure after
// `run.started` is a fake (the journal's end-of-updates write made to throw once), since a real
// store cannot be made to fail on demand at exactly that point.
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { OpenRunJournal } from '../../../host/runs/journal.js';
import { chatEvent, tempHost } from '../../helpers/host.js';

const host = tempHost();
afterAll(() => host.close());
afterEach(() => vi.restoreAllMocks());

host.apply({ bindings: [{ id: 'echo', runner: 'echo', sandbox: 'process', route: { bot: 'echo' } }] });

/** The run's lifecycle events, in order. */
const lifecycle = (sessionId: string, runId: string) =>
  host.store
    .readEvents(sessionId)
    .filter((e) => e.runId === runId && (e.type === 'run.started' || e.type === 'run.ended'))
    .map((e) => ({ type: e.type, status: (e.data as { status?: string }).status }));

/** Make the first end-of-updates write after `run.started` throw (a fake of a store failing there). */
function failAfterStart() {
  vi.spyOn(OpenRunJournal.prototype, 'endUpdates').mockImplementationOnce(() => {
    throw new Error('fake: the store failed after the runner started');
  });
}

describe('a throw after run.started ends the run once', () => {
  it('dispatched: one run.ended, failed, naming the host failure (not "could not start")', async () => {
    failAfterStart();
    const ticket = await host.dispatcher.dispatch(chatEvent({ bot: 'echo', text: 'hello' }));
    if (ticket.status === 'duplicate') throw new Error('duplicate');
    const outcome = await ticket.done;
    expect(lifecycle(ticket.sessionId, ticket.runId)).toEqual([
      { type: 'run.started', status: undefined },
      { type: 'run.ended', status: 'failed' },
    ]);
    expect(outcome.status).toBe('failed');
    expect(outcome.reason).toContain('fake: the store failed after the runner started');
    expect(outcome.reason).not.toContain('could not start');
    expect(host.store.run(ticket.runId)!.status).toBe('failed');
  }, 60_000);

  it('ad hoc: one run.ended, and the failed outcome is returned, not thrown', async () => {
    failAfterStart();
    let runId = '';
    let sessionId = '';
    const outcome = await host.runs.runAdHoc({
      runner: 'echo',
      event: chatEvent({ bot: 'adhoc', text: 'hello' }) as never,
      onStart: (info) => ({ runId, sessionId } = info),
    });
    expect(lifecycle(sessionId, runId)).toEqual([
      { type: 'run.started', status: undefined },
      { type: 'run.ended', status: 'failed' },
    ]);
    expect(outcome.status).toBe('failed');
    expect(outcome.reason).toContain('fake: the store failed after the runner started');
  }, 60_000);

  it('a caller abandoning a run that already ended adds no second run.ended', async () => {
    const ticket = await host.dispatcher.dispatch(chatEvent({ bot: 'echo', text: 'done once' }));
    if (ticket.status === 'duplicate') throw new Error('duplicate');
    expect((await ticket.done).status).toBe('completed');
    const queued = { runId: ticket.runId, sessionId: ticket.sessionId, goalRevision: 0, queuedSeq: 0 };
    host.runs.abandon(queued, 'the run could not start: a late throw', 'failed');
    expect(lifecycle(ticket.sessionId, ticket.runId)).toEqual([
      { type: 'run.started', status: undefined },
      { type: 'run.ended', status: 'completed' },
    ]);
    expect(host.store.run(ticket.runId)!.status).toBe('completed');
  }, 60_000);
});
