// Audit: verify the signed chain on demand (the host walks it; rate-limited by the API), the tenant's recent
// records as sentences, and an export of every record as JSON lines.
import { useState } from 'preact/hooks';
import type { ExportedAuditRecord } from '../../host/ops/auditExport.js';
import { ErrorNote } from '../components/ErrorNote.js';
import { Table } from '../components/Table.js';
import { Time } from '../components/Time.js';
import { plural } from '../lib/format.js';
import { href } from '../lib/route.js';
import { useLoad } from '../lib/useLoad.js';
import type { PageProps } from './index.js';

/** An audit record as the API exports it. */
type AuditRecord = ExportedAuditRecord;

/** `GET /v1/audit/verify`. */
interface Verdict {
  ok: boolean;
  records: number;
  checkpoints?: number;
  head?: string;
  keyId?: string;
  problem?: string;
  seq?: number;
  detail?: string;
}

const RECENT = 50;

/** The audit page. */
export function Audit({ session }: PageProps) {
  const recent = useLoad(
    (signal) => session.api.get<{ records: AuditRecord[] }>(`/v1/audit/export?order=desc&limit=${RECENT}`, signal),
    [session],
  );
  return (
    <>
      <h1>Audit</h1>
      <p class="muted">
        Every decision, approval, configuration change and run end is a record in one signed, hash-chained log.
      </p>
      <Verify session={session} />
      <Export session={session} />
      <h2>Recent records</h2>
      <ErrorNote error={recent.error} action="Reading the records" />
      {recent.data ? (
        <Table
          rows={recent.data.records}
          rowKey={(r) => String(r.seq)}
          empty="No audit records of this tenant yet."
          caption={`The ${plural(recent.data.records.length, 'latest record')}, newest first`}
          columns={[
            { title: 'Seq', numeric: true, cell: (r) => r.seq },
            { title: 'When', cell: (r) => <Time at={r.at} /> },
            { title: 'What', cell: (r) => <code>{r.type}</code> },
            { title: 'Who', cell: (r) => r.actor },
            {
              title: 'Run',
              cell: (r) => (r.runId ? <a href={href('runs', r.runId)}>{r.runId}</a> : <span class="muted">—</span>),
            },
            { title: 'Details', cell: (r) => <RecordData data={r.data} /> },
          ]}
        />
      ) : null}
    </>
  );
}

/** A record's data: a short sentence of its top-level fields, the whole JSON on demand. */
function RecordData({ data }: { data: unknown }) {
  const [open, setOpen] = useState(false);
  if (data === null || typeof data !== 'object') return <span>{String(data ?? '')}</span>;
  const fields = Object.entries(data as Record<string, unknown>)
    .filter(([, v]) => v !== null && (typeof v !== 'object' || Array.isArray(v)))
    .slice(0, 4)
    .map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(', ') : String(v)}`);
  const summary = fields.join(' · ');
  return (
    <>
      <span>{summary.length > 160 ? `${summary.slice(0, 160)}…` : summary}</span>{' '}
      <button type="button" aria-expanded={open} onClick={() => setOpen(!open)}>
        {open ? 'Hide' : 'All fields'}
      </button>
      {open ? <pre>{JSON.stringify(data, null, 2)}</pre> : null}
    </>
  );
}

/** The verify button and its verdict. */
function Verify({ session }: { session: PageProps['session'] }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const [verdict, setVerdict] = useState<Verdict & { at: string }>();
  const verify = async () => {
    setBusy(true);
    setError(undefined);
    try {
      const v = await session.api.get<Verdict>('/v1/audit/verify');
      setVerdict({ ...v, at: new Date().toISOString() });
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section aria-labelledby="verify">
      <h2 id="verify">Verify the chain</h2>
      <p class="muted">
        The host checks every record’s hash, link and signature against the data folder’s public key. It takes time in
        proportion to the log, so the API allows a few a minute.
      </p>
      <button type="button" class="primary" onClick={() => void verify()} disabled={busy}>
        {busy ? 'Verifying…' : 'Verify now'}
      </button>
      <ErrorNote error={error} action="Verifying" />
      {verdict ? (
        <p role="status">
          {verdict.ok ? (
            <>
              <span class="badge ok">intact</span> {plural(verdict.records, 'record')} and{' '}
              {plural(verdict.checkpoints ?? 0, 'signed checkpoint')} verified (key <code>{verdict.keyId}</code>),{' '}
              <Time at={verdict.at} relative />.
            </>
          ) : (
            <>
              <span class="badge bad">broken</span> Record {verdict.seq}: {verdict.problem}. {verdict.detail}
            </>
          )}
        </p>
      ) : null}
    </section>
  );
}

/** Download every record the token may read as JSON lines (page by page through the export). */
function Export({ session }: { session: PageProps['session'] }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const [count, setCount] = useState<number>();
  const run = async () => {
    setBusy(true);
    setError(undefined);
    try {
      const lines: string[] = [];
      let after = 0;
      for (;;) {
        const page = await session.api.get<{ records: AuditRecord[]; next: number; more: boolean }>(
          `/v1/audit/export?after=${after}&limit=1000`,
        );
        for (const r of page.records) lines.push(`${JSON.stringify(r)}\n`);
        if (!page.more) break;
        after = page.next;
      }
      const url = URL.createObjectURL(new Blob(lines, { type: 'application/x-ndjson' }));
      const link = document.createElement('a');
      link.href = url;
      link.download = `paddock-audit-${session.who.tenant}.jsonl`;
      link.click();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
      setCount(lines.length);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section aria-labelledby="export">
      <h2 id="export">Export</h2>
      <button type="button" onClick={() => void run()} disabled={busy}>
        {busy ? 'Exporting…' : 'Download all records (JSON lines)'}
      </button>
      {count !== undefined ? <span role="status"> {plural(count, 'record')} downloaded.</span> : null}
      <ErrorNote error={error} action="Exporting" />
    </section>
  );
}
