// Overview: what an admin checks first — runs by outcome in the last 24 h, running and queued runs, pending
// approvals, this machine's sandbox support and the last audit verification. Three requests, no chain walk.
import { ErrorNote } from '../components/ErrorNote.js';
import { Time } from '../components/Time.js';
import { plural } from '../lib/format.js';
import { href } from '../lib/route.js';
import { useLoad } from '../lib/useLoad.js';
import type { PageProps } from './index.js';
import { SandboxSupport, type Doctor } from './SandboxSupport.js';

/** `GET /v1/overview`. */
export interface OverviewFigures {
  tenant: string;
  at: string;
  runs: {
    last24h: { since: string; byOutcome: Record<string, number>; total: number };
    running: number;
    queued: number;
  };
  approvals: { pending: number };
  auditVerification: {
    at: string;
    ok: boolean;
    records: number;
    firstBad: { seq: number; problem: string } | null;
    via: 'cli' | 'api';
  } | null;
}

/** Outcomes in the order a person reads them, with how each is shown. */
const OUTCOMES: [string, string][] = [
  ['completed', 'ok'],
  ['failed', 'bad'],
  ['crashed', 'bad'],
  ['timed_out', 'warn'],
  ['cancelled', 'warn'],
  ['interrupted', 'warn'],
];

function Card(props: { value: number | string; label: string; link?: string; tone?: string }) {
  const body = (
    <>
      <span class={`value ${props.tone ?? ''}`}>
        {typeof props.value === 'number' ? props.value.toLocaleString() : props.value}
      </span>
      <span class="label">{props.label}</span>
    </>
  );
  return (
    <div class="card">
      {props.link ? (
        <a class="card-link" href={props.link}>
          {body}
        </a>
      ) : (
        body
      )}
    </div>
  );
}

/** The overview page. */
export function Overview({ session }: PageProps) {
  const figures = useLoad((signal) => session.api.get<OverviewFigures>('/v1/overview', signal), [session]);
  const doctor = useLoad((signal) => session.api.get<Doctor>('/v1/doctor', signal), [session]);
  const f = figures.data;
  const byOutcome = f?.runs.last24h.byOutcome ?? {};
  const others = Object.keys(byOutcome).filter((k) => !OUTCOMES.some(([o]) => o === k));
  return (
    <>
      <h1>Overview</h1>
      <ErrorNote error={figures.error} action="Loading the figures" />
      {f ? (
        <>
          <div class="cards" aria-label="Now">
            <Card value={f.runs.running} label="running runs" link={href('runs')} />
            <Card value={f.runs.queued} label="queued runs" link={href('runs')} />
            <Card
              value={f.approvals.pending}
              label="pending approvals"
              link={href('approvals')}
              tone={f.approvals.pending > 0 ? 'warn' : undefined}
            />
          </div>
          <h2>Runs ended in the last 24 hours: {f.runs.last24h.total.toLocaleString()}</h2>
          <p class="muted">
            Since <Time at={f.runs.last24h.since} />, tenant <strong>{f.tenant}</strong>.
          </p>
          <table class="outcomes">
            <thead>
              <tr>
                <th scope="col">Outcome</th>
                <th scope="col" class="num">
                  Runs
                </th>
              </tr>
            </thead>
            <tbody>
              {[...OUTCOMES.map(([o]) => o), ...others].map((outcome) => (
                <tr key={outcome}>
                  <td data-label="Outcome">
                    <span class={`badge ${OUTCOMES.find(([o]) => o === outcome)?.[1] ?? ''}`}>{outcome}</span>
                  </td>
                  <td data-label="Runs" class="num">
                    {(byOutcome[outcome] ?? 0).toLocaleString()}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <h2>Audit log</h2>
          <AuditStatus verification={f.auditVerification} />
        </>
      ) : figures.loading ? (
        <p class="muted">Loading…</p>
      ) : null}
      <h2>This machine's sandbox</h2>
      <ErrorNote error={doctor.error} action="Reading the machine's facts" />
      {doctor.data ? <SandboxSupport doctor={doctor.data} /> : doctor.loading ? <p class="muted">Loading…</p> : null}
    </>
  );
}

/** The last verification of the audit chain, as a sentence. */
function AuditStatus({ verification: v }: { verification: OverviewFigures['auditVerification'] }) {
  if (!v)
    return (
      <p>
        <span class="badge warn">never verified</span> The chain has not been verified yet:{' '}
        <a href={href('audit')}>verify it now</a> or run <code>paddock audit verify</code>.
      </p>
    );
  return (
    <p>
      {v.ok ? <span class="badge ok">intact</span> : <span class="badge bad">broken</span>}{' '}
      {v.ok
        ? `${plural(v.records, 'record')} verified`
        : `verification failed at record ${v.firstBad?.seq ?? '?'} (${v.firstBad?.problem ?? 'unknown problem'})`}{' '}
      <Time at={v.at} relative /> from the {v.via === 'cli' ? 'CLI' : 'console or API'}.{' '}
      <a href={href('audit')}>Audit page</a>
    </p>
  );
}
