// Sessions: the tenant's sessions, newest activity first (`GET /v1/sessions`); `#/sessions/<id>` is one session
// (SessionDetail).
import { ErrorNote } from '../components/ErrorNote.js';
import { Table, type Column } from '../components/Table.js';
import { Time } from '../components/Time.js';
import { href } from '../lib/route.js';
import { useLoad } from '../lib/useLoad.js';
import type { PageProps } from './index.js';
import { SessionDetail } from './SessionDetail.js';

/** A row of `GET /v1/sessions`. */
interface SessionRow {
  id: string;
  bindingId: string;
  conversationKey: string;
  createdAt: string;
  lastActivityAt: string;
  paused: { reason: string } | null;
  runs: number;
}

const columns: Column<SessionRow>[] = [
  { title: 'Session', cell: (s) => <a href={href('sessions', s.id)}>{s.id}</a> },
  { title: 'Binding', cell: (s) => s.bindingId },
  { title: 'Conversation', cell: (s) => <span class="mono">{s.conversationKey}</span> },
  { title: 'Runs', cell: (s) => s.runs.toLocaleString(), numeric: true },
  { title: 'Last activity', cell: (s) => <Time at={s.lastActivityAt} relative /> },
  {
    title: 'State',
    cell: (s) =>
      s.paused ? (
        <span class="badge bad" title={s.paused.reason}>
          paused
        </span>
      ) : (
        <span class="badge ok">active</span>
      ),
  },
];

/** The sessions list, or one session when the route names it. */
export function Sessions(props: PageProps) {
  if (props.params[0]) return <SessionDetail session={props.session} sessionId={props.params[0]} />;
  return <SessionList {...props} />;
}

function SessionList({ session }: PageProps) {
  // GET /v1/sessions answers admin and viewer tokens; an approver opens a session from a run or an approval.
  const listable = session.who.role === 'admin' || session.who.role === 'viewer';
  const load = useLoad(
    async (signal) =>
      listable
        ? session.api.get<{ sessions: SessionRow[]; next: string | null }>('/v1/sessions?limit=100', signal)
        : undefined,
    [session, listable],
  );
  return (
    <>
      <h1>Sessions</h1>
      {!listable ? (
        <p class="notice">
          Listing sessions needs an admin or viewer token (<code>GET /v1/sessions</code>). Open a session from a run.
        </p>
      ) : null}
      <ErrorNote error={load.error} action="Loading sessions" />
      {load.data ? (
        <>
          <Table columns={columns} rows={load.data.sessions} rowKey={(s) => s.id} empty="No session yet." />
          {load.data.next ? <p class="muted">Showing the 100 most recently active sessions.</p> : null}
        </>
      ) : listable && load.loading ? (
        <p class="muted">Loading…</p>
      ) : null}
    </>
  );
}
