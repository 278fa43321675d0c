// Approvals: the pending ones (approve with a grant lifetime, or deny), the decided ones newest first, and the live
// capability grants (revoke). Reads `GET /v1/approvals`, `GET /v1/grants` and each pending run's `GET /v1/runs/:id`
// (its runner); refreshed every few seconds.
import { useEffect } from 'preact/hooks';
import { ConfirmButton } from '../components/Confirm.js';
import { ErrorNote } from '../components/ErrorNote.js';
import { PendingApproval } from '../components/PendingApproval.js';
import { Table, type Column } from '../components/Table.js';
import { Time } from '../components/Time.js';
import type { Approval, Grant } from '../lib/approvals.js';
import { href } from '../lib/route.js';
import type { Run } from '../lib/runs.js';
import { can, type Session } from '../lib/session.js';
import { useLoad } from '../lib/useLoad.js';
import type { PageProps } from './index.js';

const REFRESH_MS = 5_000;
/** Pending approvals and live grants are read in full up to this many pages of 200 (more is said on the page). */
const PAGES = 10;
/** History: the newest decided approvals shown. */
const HISTORY_SHOWN = 50;

/**
 * Every item of a keyset-paged list (`?after=` the previous page's `next`) up to {@link PAGES} pages of 200, and
 * whether more remained.
 */
async function readPages<T>(session: Session, path: string, key: string, signal: AbortSignal) {
  const items: T[] = [];
  let after: string | null = null;
  for (let page = 0; page < PAGES; page++) {
    const query: string = after ? `&after=${encodeURIComponent(after)}` : '';
    const got: Record<string, unknown> & { next: string | null } = await session.api.get(
      `${path}${path.includes('?') ? '&' : '?'}limit=200${query}`,
      signal,
    );
    items.push(...(got[key] as T[]));
    after = got.next;
    if (!after) return { items, more: false };
  }
  return { items, more: true };
}

/** Every pending approval (to the page bound), the newest decided ones, the live grants, the pending runs' runners. */
async function loadAll(session: Session, signal: AbortSignal) {
  const { items: pending, more } = await readPages<Approval>(
    session,
    '/v1/approvals?status=pending',
    'approvals',
    signal,
  );
  // Newest first: a page of 200 holds the latest decisions unless more than 150 asks are still pending.
  const recent = await session.api.get<{ approvals: Approval[] }>('/v1/approvals?order=desc&limit=200', signal);
  // Every live grant (to the page bound): one that is not listed cannot be revoked here.
  const grants = await readPages<Grant>(session, '/v1/grants', 'grants', signal);
  const runners = new Map<string, string>();
  await Promise.all(
    [...new Set(pending.map((a) => a.runId))].map(async (id) => {
      try {
        runners.set(id, (await session.api.get<Run>(`/v1/runs/${encodeURIComponent(id)}`, signal)).runner);
      } catch {
        // The sentence then names the channel the ask came through instead.
      }
    }),
  );
  const history = recent.approvals
    .filter((a) => a.status !== 'pending')
    .sort((x, y) => (y.decidedAt ?? y.createdAt).localeCompare(x.decidedAt ?? x.createdAt))
    .slice(0, HISTORY_SHOWN);
  return { pending, history, grants: grants.items, runners, more, moreGrants: grants.more };
}

const statusTone = (s: Approval['status']) => (s === 'approved' ? 'ok' : s === 'denied' ? 'bad' : 'warn');

const historyColumns: Column<Approval>[] = [
  {
    title: 'Action',
    cell: (a) => (
      <>
        <code>{a.effect}</code> of <code>{a.target.value}</code>
      </>
    ),
  },
  { title: 'Decision', cell: (a) => <span class={`badge ${statusTone(a.status)}`}>{a.status}</span> },
  { title: 'By', cell: (a) => a.decidedBy ?? '—' },
  { title: 'Reason', cell: (a) => a.reason ?? '' },
  { title: 'When', cell: (a) => <Time at={a.decidedAt ?? a.createdAt} relative /> },
  { title: 'Run', cell: (a) => <a href={href('runs', a.runId)}>{a.runId}</a> },
  { title: 'Grant', cell: (a) => a.grantId ?? '—' },
];

/** The approvals page. */
export function Approvals({ session }: PageProps) {
  const load = useLoad((signal) => loadAll(session, signal), [session]);
  useEffect(() => {
    const timer = setInterval(load.reload, REFRESH_MS);
    return () => clearInterval(timer);
  }, [load.reload]);
  const data = load.data;
  const decide = can.decide(session.who.role);

  const grantColumns: Column<Grant>[] = [
    {
      title: 'Allows',
      cell: (g) => (
        <>
          <code>{g.capability}</code> of <code>{g.scope.value}</code> <span class="muted">({g.scope.kind})</span>
        </>
      ),
    },
    {
      title: 'Lifetime',
      cell: (g) => `${g.lifetime}${g.runId ? ` (${g.runId})` : g.sessionId ? ` (${g.sessionId})` : ''}`,
    },
    { title: 'Binding', cell: (g) => g.bindingId },
    { title: 'Granted by', cell: (g) => g.grantor },
    { title: 'Created', cell: (g) => <Time at={g.createdAt} relative /> },
    { title: 'Expires', cell: (g) => <Time at={g.expiresAt} /> },
  ];
  if (decide)
    grantColumns.push({
      title: 'Revoke',
      cell: (g) => (
        <ConfirmButton
          label="Revoke"
          question={`Revoke the grant of ${g.capability} on ${g.scope.value}?`}
          confirmLabel="Revoke the grant"
          danger
          action={() => session.api.post(`/v1/grants/${encodeURIComponent(g.id)}/revoke`, {})}
          onDone={load.reload}
        >
          <p>The next action it would have allowed asks again. This cannot be undone.</p>
        </ConfirmButton>
      ),
    });

  return (
    <>
      <h1>Approvals</h1>
      <ErrorNote error={load.error} action="Loading approvals" />
      {data ? (
        <>
          <h2>Pending ({data.pending.length})</h2>
          {!decide ? <p class="notice">Your role reads approvals; approvers and admins decide them.</p> : null}
          {data.pending.length === 0 ? (
            <p class="empty">Nothing waits for a decision.</p>
          ) : (
            <ul class="cards approvals" aria-label="Pending approvals">
              {data.pending.map((a) => (
                <PendingApproval
                  key={a.id}
                  session={session}
                  approval={a}
                  runner={data.runners.get(a.runId)}
                  groupSize={a.groupId ? data.pending.filter((p) => p.groupId === a.groupId).length : 1}
                  onDecided={load.reload}
                />
              ))}
            </ul>
          )}
          {data.more ? <p class="muted">Only the first 2 000 pending approvals are shown.</p> : null}
          <h2>Live grants</h2>
          <Table columns={grantColumns} rows={data.grants} rowKey={(g) => g.id} empty="No live grant." />
          {data.moreGrants ? <p class="muted">Only the first 2 000 live grants are shown.</p> : null}
          <h2>History</h2>
          <Table columns={historyColumns} rows={data.history} rowKey={(a) => a.id} empty="No decided approval yet." />
        </>
      ) : load.loading ? (
        <p class="muted">Loading…</p>
      ) : null}
    </>
  );
}
