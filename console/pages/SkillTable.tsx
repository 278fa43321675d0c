// The skills of the resources page: each with the digest recorded when it was applied and whether a run found its
// content changed since (GET /v1/skills; applying the skill again accepts its content and clears the flag).
import type { ComponentChildren } from 'preact';
import { Table } from '../components/Table.js';
import { Time } from '../components/Time.js';
import { textOf, type ConfigObject } from './configTypes.js';
import type { SkillState } from './spendTypes.js';

/** A digest shortened for a cell (the whole one in the title). */
function Digest({ digest }: { digest: string | null | undefined }) {
  if (!digest) return <span class="badge warn">not recorded</span>;
  return (
    <span class="mono" title={digest}>
      {digest.length > 23 ? `${digest.slice(0, 23)}…` : digest}
    </span>
  );
}

/** The skills table. */
export function SkillTable(props: {
  skills: ConfigObject[];
  states: SkillState[];
  grantedTo: (id: string) => ComponentChildren;
}) {
  const of = (id: string) => props.states.find((s) => s.id === id);
  return (
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
          cell: (r) => {
            const s = of(r.id);
            return (
              <>
                <Digest digest={s?.digest} />
                {s?.version ? ` v${s.version}` : ''}
                {s?.recordedAt ? (
                  <>
                    {' '}
                    <span class="muted">
                      applied <Time at={s.recordedAt} relative />
                    </span>
                  </>
                ) : null}
              </>
            );
          },
        },
        {
          title: 'Content',
          cell: (r) => {
            const changed = of(r.id)?.changed;
            return changed ? (
              <>
                <span class="badge bad" title={`now ${changed.digest}`}>
                  changed since applied
                </span>{' '}
                <span class="prose">
                  run <span class="mono">{changed.runId}</span> found <Digest digest={changed.digest} />{' '}
                  <Time at={changed.at} relative />
                </span>
              </>
            ) : (
              <span class="badge ok">as applied</span>
            );
          },
        },
        { title: 'Granted to', cell: (r) => props.grantedTo(r.id) },
      ]}
    />
  );
}
