// A run's or session's events as readable lines, in seq order: a label, the sentence, the time, and the stored
// event behind a "details" toggle. Every text is the runner's, model's or user's: rendered as text only.
import { clip, eventLines, SHOWN_JSON, SHOWN_TEXT, type StoredEvent } from '../lib/events.js';
import { href } from '../lib/route.js';
import { LazyDetails } from './LazyDetails.js';
import { Time } from './Time.js';

/** The lines of `events`; `showRun` links each line to its run (on a session's page). */
export function EventList(props: { events: StoredEvent[]; showRun?: boolean; empty: string; label: string }) {
  const lines = eventLines(props.events);
  if (lines.length === 0) return <p class="empty">{props.empty}</p>;
  return (
    <ol class="events" aria-label={props.label}>
      {lines.map((line) => (
        <li key={line.seq} data-seq={line.seq} data-type={line.events[0]!.type}>
          <span class={`badge ${line.tone ?? ''}`}>{line.label}</span>{' '}
          <span class="event-text">{clip(line.text, SHOWN_TEXT)}</span>{' '}
          <span class="muted event-meta">
            #{line.seq} · <Time at={line.at} />
            {props.showRun && line.runId ? (
              <>
                {' '}
                · <a href={href('runs', line.runId)}>{line.runId}</a>
              </>
            ) : null}
          </span>
          <LazyDetails
            summary="details"
            content={() => <pre>{clip(JSON.stringify(line.events, null, 2), SHOWN_JSON)}</pre>}
          />
        </li>
      ))}
    </ol>
  );
}
