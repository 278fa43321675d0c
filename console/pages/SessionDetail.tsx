// One session: its transcript and runs (`GET /v1/sessions/:id`), the harness resume pointers its runs saved and
// every event as it happens (`GET /v1/sessions/:id/events`, SSE). The session view of the API does not carry the
// pointers, so they are read from the `external.saved` events of the stream.
import { useEffect } from 'preact/hooks';
import { ErrorNote } from '../components/ErrorNote.js';
import { EventList } from '../components/EventList.js';
import { RunStatus } from '../components/RunStatus.js';
import { Table } from '../components/Table.js';
import { Time } from '../components/Time.js';
import { clip, resumePointers, SHOWN_TEXT, usageText } from '../lib/events.js';
import { href } from '../lib/route.js';
import type { Session } from '../lib/session.js';
import { useEventStream } from '../lib/useEventStream.js';
import { useLoad } from '../lib/useLoad.js';

/** `GET /v1/sessions/:id`. */
interface SessionView {
  sessionId: string;
  bindingId: string | null;
  maxSeq: number;
  paused: { reason: string } | null;
  runs: { runId: string; runner: string | null; status: string | null; reason: string | null; usage: unknown }[];
  transcript: { seq: number; role: 'user' | 'assistant'; runId: string | null; text: string }[];
}

/** The page of session `sessionId`. */
export function SessionDetail({ session, sessionId }: { session: Session; sessionId: string }) {
  const path = `/v1/sessions/${encodeURIComponent(sessionId)}`;
  const load = useLoad((signal) => session.api.get<SessionView>(path, signal), [session, path]);
  const stream = useEventStream(session.api, `${path}/events`);
  // A new message, reply or run end changes the transcript and the runs: read the view again.
  const changes = stream.events.filter((e) =>
    ['message.received', 'run.queued', 'run.ended', 'run.interrupted', 'session.paused', 'session.resumed'].includes(
      e.type,
    ),
  ).length;
  useEffect(() => {
    if (load.data && load.data.maxSeq < (stream.events.at(-1)?.seq ?? 0)) load.reload();
  }, [changes]);
  const view = load.data;
  const pointers = resumePointers(stream.events);

  return (
    <>
      <p>
        <a href={href('sessions')}>← Sessions</a>
      </p>
      <h1>Session {sessionId}</h1>
      <ErrorNote error={load.error} action="Loading the session" />
      {view ? (
        <>
          <dl class="facts">
            <dt>Binding</dt>
            <dd>{view.bindingId ?? '—'}</dd>
            <dt>State</dt>
            <dd>
              {view.paused ? (
                <>
                  <span class="badge bad">paused</span> {view.paused.reason}
                </>
              ) : (
                <span class="badge ok">active</span>
              )}
            </dd>
            <dt>Resume pointers</dt>
            <dd>
              {pointers ? (
                <>
                  {pointers.external.sessionId ? (
                    <>
                      harness session <code>{String(pointers.external.sessionId)}</code>
                    </>
                  ) : null}
                  {pointers.external.workingDirectory ? (
                    <>
                      {' '}
                      in <code>{String(pointers.external.workingDirectory)}</code>
                    </>
                  ) : null}{' '}
                  <span class="muted">
                    (saved by{' '}
                    {pointers.runId ? <a href={href('runs', pointers.runId)}>{pointers.runId}</a> : 'the host'},{' '}
                    <Time at={pointers.at} relative />)
                  </span>
                </>
              ) : (
                <span class="muted">none saved: the next run starts its harness afresh</span>
              )}
            </dd>
          </dl>

          <h2>Transcript</h2>
          {view.transcript.length === 0 ? (
            <p class="empty">No message yet.</p>
          ) : (
            <ol class="events transcript" aria-label="Transcript">
              {view.transcript.map((t) => (
                <li key={t.seq} data-seq={t.seq}>
                  <span class={`badge ${t.role === 'user' ? '' : 'ok'}`}>{t.role}</span>{' '}
                  <span class="event-text">{clip(t.text, SHOWN_TEXT)}</span>
                  {t.runId ? (
                    <div class="muted event-meta">
                      <a href={href('runs', t.runId)}>{t.runId}</a>
                    </div>
                  ) : null}
                </li>
              ))}
            </ol>
          )}

          <h2>Runs</h2>
          <Table
            columns={[
              { title: 'Run', cell: (r) => <a href={href('runs', r.runId)}>{r.runId}</a> },
              { title: 'Status', cell: (r) => <RunStatus status={r.status} reason={r.reason} /> },
              { title: 'Runner', cell: (r) => r.runner ?? '—' },
              { title: 'Reason', cell: (r) => r.reason ?? '' },
              { title: 'Usage', cell: (r) => usageText(r.usage) || '—' },
            ]}
            rows={view.runs}
            rowKey={(r) => r.runId}
            empty="No run yet."
          />
        </>
      ) : load.loading ? (
        <p class="muted">Loading…</p>
      ) : null}

      <h2>
        Events{' '}
        <span class="muted" role="status">
          {stream.open ? '(live)' : '(stream closed)'}
        </span>
      </h2>
      {stream.end?.reason === 'failed' ? <ErrorNote error={stream.end.error} action="Following the session" /> : null}
      <details open={stream.events.length <= 60}>
        <summary>{stream.events.length.toLocaleString()} events</summary>
        <EventList events={stream.events} showRun label="Session events" empty="No events yet." />
      </details>
    </>
  );
}
