// One run, live: its facts (`GET /v1/runs/:id`), its events as they happen (`GET /v1/runs/:id/events`, SSE, in
// order, as readable lines), and cancel for the roles that may (`POST /v1/runs/:id/cancel`, confirmed).
import { useEffect } from 'preact/hooks';
import { ConfirmButton } from '../components/Confirm.js';
import { ErrorNote } from '../components/ErrorNote.js';
import { EventList } from '../components/EventList.js';
import { RunStatus } from '../components/RunStatus.js';
import { Time } from '../components/Time.js';
import { usageText } from '../lib/events.js';
import { duration } from '../lib/format.js';
import { href } from '../lib/route.js';
import { isActive, type Run } from '../lib/runs.js';
import { can, type Session } from '../lib/session.js';
import { useEventStream } from '../lib/useEventStream.js';
import { useLoad } from '../lib/useLoad.js';

/** The live page of run `runId`. */
export function RunDetail({ session, runId }: { session: Session; runId: string }) {
  const path = `/v1/runs/${encodeURIComponent(runId)}`;
  const load = useLoad((signal) => session.api.get<Run>(path, signal), [session, path]);
  const stream = useEventStream(session.api, `${path}/events`);
  const ended = stream.events.some((e) => e.type === 'run.ended' || e.type === 'run.interrupted');
  const started = stream.events.some((e) => e.type === 'run.started');
  // The facts change when the run starts and ends: read them again then.
  useEffect(() => {
    if (started || ended) load.reload();
  }, [started, ended, load.reload]);
  const run = load.data;

  return (
    <>
      <p>
        <a href={href('runs')}>← Live runs</a>
      </p>
      <h1>Run {runId}</h1>
      <ErrorNote error={load.error} action="Loading the run" />
      {run ? (
        <>
          <dl class="facts">
            <dt>Status</dt>
            <dd>
              <RunStatus status={run.status} reason={run.reason} /> {run.reason ?? ''}
            </dd>
            <dt>Binding</dt>
            <dd>{run.bindingId ?? '—'}</dd>
            <dt>Runner</dt>
            <dd>{run.runner}</dd>
            <dt>Session</dt>
            <dd>
              <a href={href('sessions', run.sessionId)}>{run.sessionId}</a>
            </dd>
            <dt>Queued</dt>
            <dd>
              <Time at={run.queuedAt} />
            </dd>
            <dt>Started</dt>
            <dd>
              <Time at={run.startedAt} />
            </dd>
            <dt>Ended</dt>
            <dd>
              <Time at={run.endedAt} />
              {run.startedAt && run.endedAt
                ? ` (after ${duration(Date.parse(run.endedAt) - Date.parse(run.startedAt))})`
                : ''}
            </dd>
            <dt>Usage</dt>
            <dd>{usageText(run.usage) || '—'}</dd>
          </dl>
          {can.administer(session.who.role) && isActive(run.status) && !ended ? (
            <div class="actions">
              <ConfirmButton
                label="Cancel run"
                question={`Cancel run ${run.id}?`}
                confirmLabel="Cancel the run"
                danger
                action={() => session.api.post(`${path}/cancel`, { reason: 'cancelled from the console' })}
                onDone={load.reload}
              >
                <p>
                  The runner is asked to stop; the run ends <strong>cancelled</strong> and its session takes the next
                  queued message. This cannot be undone.
                </p>
              </ConfirmButton>
            </div>
          ) : null}
        </>
      ) : load.loading ? (
        <p class="muted">Loading…</p>
      ) : null}
      <h2>
        Events{' '}
        <span class="muted" role="status">
          {stream.open ? '(live)' : stream.end?.reason === 'failed' ? '(stream refused)' : '(the run is over)'}
        </span>
      </h2>
      {stream.end?.reason === 'failed' ? <ErrorNote error={stream.end.error} action="Following the run" /> : null}
      <EventList events={stream.events} label="Run events" empty={stream.open ? 'Waiting for events…' : 'No events.'} />
    </>
  );
}
