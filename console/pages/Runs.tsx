// Live runs: the tenant's running and queued runs and the recently ended ones (`GET /v1/runs`), refreshed every
// few seconds; `#/runs/<id>` is one run, live (RunDetail).
import { useEffect } from 'preact/hooks';
import { ErrorNote } from '../components/ErrorNote.js';
import { RunStatus } from '../components/RunStatus.js';
import { Table, type Column } from '../components/Table.js';
import { Time } from '../components/Time.js';
import { duration } from '../lib/format.js';
import { href } from '../lib/route.js';
import { isActive, type Run, type RunPage } from '../lib/runs.js';
import { useLoad } from '../lib/useLoad.js';
import type { PageProps } from './index.js';
import { RunDetail } from './RunDetail.js';

/** How often the lists are read again (the detail page streams instead). */
const REFRESH_MS = 5_000;

const columns: Column<Run>[] = [
  { title: 'Run', cell: (r) => <a href={href('runs', r.id)}>{r.id}</a> },
  { title: 'Status', cell: (r) => <RunStatus status={r.status} reason={r.reason} /> },
  { title: 'Binding', cell: (r) => r.bindingId ?? '—' },
  { title: 'Runner', cell: (r) => r.runner },
  { title: 'Queued', cell: (r) => <Time at={r.queuedAt} relative /> },
  {
    title: 'Duration',
    cell: (r) =>
      r.startedAt ? duration((r.endedAt ? Date.parse(r.endedAt) : Date.now()) - Date.parse(r.startedAt)) : '—',
  },
  { title: 'Session', cell: (r) => <a href={href('sessions', r.sessionId)}>{r.sessionId}</a> },
];

/** The runs list, or one run when the route names it. */
export function Runs(props: PageProps) {
  if (props.params[0]) return <RunDetail session={props.session} runId={props.params[0]} />;
  return <RunList {...props} />;
}

function RunList({ session }: PageProps) {
  // GET /v1/runs answers admin and viewer tokens; an approver opens a run from its approval instead.
  const listable = session.who.role === 'admin' || session.who.role === 'viewer';
  const load = useLoad(
    async (signal) => {
      if (!listable) return undefined;
      const [active, recent] = await Promise.all([
        session.api.get<RunPage>('/v1/runs?status=running,queued&limit=200', signal),
        session.api.get<RunPage>('/v1/runs?limit=30', signal),
      ]);
      return { active: active.runs, ended: recent.runs.filter((r) => !isActive(r.status)) };
    },
    [session, listable],
  );
  useEffect(() => {
    if (!listable) return;
    const timer = setInterval(load.reload, REFRESH_MS);
    return () => clearInterval(timer);
  }, [listable, load.reload]);

  return (
    <>
      <h1>Live runs</h1>
      {!listable ? (
        <p class="notice">
          Listing runs needs an admin or viewer token (<code>GET /v1/runs</code>). Open a run from its approval.
        </p>
      ) : null}
      <ErrorNote error={load.error} action="Loading runs" />
      {load.data ? (
        <>
          <h2>Running and queued</h2>
          <Table columns={columns} rows={load.data.active} rowKey={(r) => r.id} empty="No run is running or queued." />
          <h2>Recently ended</h2>
          <Table columns={columns} rows={load.data.ended} rowKey={(r) => r.id} empty="No run has ended yet." />
        </>
      ) : listable && load.loading ? (
        <p class="muted">Loading…</p>
      ) : null}
    </>
  );
}
