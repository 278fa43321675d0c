// The skills of the resources page: each with the digest recorded when it was applied and whether a run found its
// content changed since (from the tenant's audit records; see skillDigests.ts).
import type { ComponentChildren } from 'preact';
import { ErrorNote } from '../components/ErrorNote.js';
import { Table } from '../components/Table.js';
import { Time } from '../components/Time.js';
import type { Session } from '../lib/session.js';
import { useLoad } from '../lib/useLoad.js';
import { textOf, type ConfigObject } from './configTypes.js';
import { MAX_AUDIT_PAGES, skillDigests } from './skillDigests.js';

/** A digest shortened for a cell (the whole one in the title). */
function Digest({ digest }: { digest: string | undefined }) {
  if (!digest) return <span class="muted">not recorded</span>;
  return (
    <span class="mono" title={digest}>
      {digest.length > 23 ? `${digest.slice(0, 23)}…` : digest}
    </span>
  );
}

/** The skills table. */
export function SkillTable(props: {
  session: Session;
  skills: ConfigObject[];
  grantedTo: (id: string) => ComponentChildren;
}) {
  const wanted = props.skills.length > 0;
  const digests = useLoad(
    (signal) => (wanted ? skillDigests(props.session.api, signal) : Promise.resolve(undefined)),
    [props.session, wanted],
  );
  const of = (id: string) => digests.data?.bySkill.get(id);
  return (
    <>
      <ErrorNote error={digests.error} action="Reading skill digests from the audit records" />
      {digests.data?.partial ? (
        <p class="notice">
          Digests come from the first {MAX_AUDIT_PAGES * 1000} audit records only; later changes may be missing.
        </p>
      ) : null}
      <Table
        rows={props.skills}
        rowKey={(r) => r.id}
        empty="No skill."
        columns={[
          { title: 'Skill', cell: (r) => <span class="mono">{r.id}</span> },
          { title: 'Name', cell: (r) => textOf(r.spec.name) },
          { title: 'Path', cell: (r) => <span class="mono">{textOf(r.spec.path)}</span> },
          {
            title: 'Recorded digest',
            cell: (r) => (digests.loading && !digests.data ? 'reading…' : <Digest digest={of(r.id)?.recorded} />),
          },
          {
            title: 'Content',
            cell: (r) => {
              const changed = of(r.id)?.changed;
              if (!digests.data) return '';
              return changed ? (
                <span class="badge bad" title={`now ${changed.digest}`}>
                  changed since applied (seen <Time at={changed.at} relative />)
                </span>
              ) : (
                <span class="badge ok">as applied</span>
              );
            },
          },
          { title: 'Granted to', cell: (r) => props.grantedTo(r.id) },
        ]}
      />
    </>
  );
}
