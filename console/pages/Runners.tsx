// Runners: every runner the host found (manifest, capabilities, declared effects, risk note) and the bindings of
// this tenant that use it; `#/runners/<id>` shows one. From GET /v1/runners and GET /v1/bindings.
import { ErrorNote } from '../components/ErrorNote.js';
import { Table } from '../components/Table.js';
import { href } from '../lib/route.js';
import { useLoad } from '../lib/useLoad.js';
import type { BindingObject, RunnerInfo, RunnersAnswer } from './configTypes.js';
import { isEnabled } from './configTypes.js';
import { listOrNone } from './configText.js';
import type { PageProps } from './index.js';

/** The risk note of a runner, or a warning that its author gave none. */
function Risk({ runner }: { runner: RunnerInfo }) {
  return runner.risk ? (
    <span class="risk">{runner.risk}</span>
  ) : (
    <span class="badge warn">no risk note in the manifest</span>
  );
}

/** A text cut to `max` characters in a cell (all of it in the title and on the runner's page): one long word of a
 * manifest must not widen the whole table. */
function Short({ text, max }: { text: string; max: number }) {
  return text.length > max ? <span title={text}>{`${text.slice(0, max)}…`}</span> : <>{text}</>;
}

/** The runners page (a list, or one runner when the route names it). */
export function Runners({ session, params }: PageProps) {
  const load = useLoad(
    async (signal) => {
      const [runners, bindings] = await Promise.all([
        session.api.get<RunnersAnswer>('/v1/runners', signal),
        session.api.get<BindingObject[]>('/v1/bindings', signal),
      ]);
      return { runners, bindings };
    },
    [session],
  );
  const id = params[0];
  if (!load.data)
    return (
      <>
        <h1>{id ? `Runner ${id}` : 'Runners'}</h1>
        {load.loading ? <p class="muted">Loading…</p> : <ErrorNote error={load.error} action="Loading runners" />}
      </>
    );
  const { runners, bindings } = load.data;
  const usersOf = (runnerId: string) => bindings.filter((b) => b.spec.runner === runnerId);
  if (id) {
    const runner = runners.runners.find((r) => r.id === id);
    return runner ? (
      <RunnerDetail runner={runner} bindings={usersOf(id)} />
    ) : (
      <>
        <h1>Runner {id}</h1>
        <ErrorNote error={new Error(`The host has no runner "${id}".`)} />
        <a href={href('runners')}>All runners</a>
      </>
    );
  }
  return (
    <>
      <h1>Runners</h1>
      <p class="hint">
        Runners are host-wide: any binding may use a runner the host finds. Bindings listed are this tenant's.
      </p>
      <ErrorNote error={load.error} action="Reloading" />
      <Table
        caption="Installed runners"
        rows={runners.runners}
        rowKey={(r) => r.id}
        empty="The host found no runner."
        columns={[
          {
            title: 'Runner',
            cell: (r) => (
              <>
                <a href={href('runners', r.id)}>{r.name || r.id}</a> <span class="muted mono">{r.id}</span>
              </>
            ),
          },
          { title: 'Version', cell: (r) => <Short text={r.version} max={16} /> },
          {
            title: 'Description',
            cell: (r) => (r.description ? <span class="prose">{r.description}</span> : <span class="muted">none</span>),
          },
          { title: 'Effects', cell: (r) => listOrNone(r.effects) },
          { title: 'Risk', cell: (r) => <Risk runner={r} /> },
          {
            title: 'Bindings',
            cell: (r) => <BindingLinks bindings={usersOf(r.id)} />,
          },
        ]}
      />
      {runners.problems.length > 0 ? (
        <>
          <h2>Runner packages that could not be loaded</h2>
          <Table
            rows={runners.problems}
            rowKey={(p) => `${p.file}:${p.field ?? ''}:${p.message}`}
            empty=""
            columns={[
              { title: 'File', cell: (p) => <span class="mono">{p.file}</span> },
              { title: 'Field', cell: (p) => p.field ?? '' },
              { title: 'Problem', cell: (p) => p.message },
            ]}
          />
        </>
      ) : null}
    </>
  );
}

/** Links to bindings (disabled ones marked), or "none". */
function BindingLinks({ bindings }: { bindings: BindingObject[] }) {
  if (bindings.length === 0) return <span class="muted">none</span>;
  return (
    <ul class="inline">
      {bindings.map((b) => (
        <li key={b.id}>
          <a href={href('bindings', b.id)}>{b.id}</a>
          {isEnabled(b.spec) ? null : <span class="badge bad">disabled</span>}
        </li>
      ))}
    </ul>
  );
}

/** One runner: its manifest as facts, and the bindings that use it. */
function RunnerDetail({ runner, bindings }: { runner: RunnerInfo; bindings: BindingObject[] }) {
  const limits = Object.entries(runner.limits ?? {});
  return (
    <>
      <p>
        <a href={href('runners')}>All runners</a>
      </p>
      <h1>
        Runner {runner.name || runner.id} <span class="muted">{runner.version}</span>
      </h1>
      <p class="description">{runner.description || <span class="muted">No description.</span>}</p>
      <dl class="facts">
        <dt>Id</dt>
        <dd class="mono">{runner.id}</dd>
        <dt>Version</dt>
        <dd>{runner.version}</dd>
        <dt>Risk</dt>
        <dd>
          <Risk runner={runner} />
        </dd>
        <dt>Host requests</dt>
        <dd>{listOrNone(runner.capabilities?.hostRequests)}</dd>
        <dt>Takes messages mid-run</dt>
        <dd>{runner.capabilities?.append ? 'yes (steering append)' : 'no'}</dd>
        <dt>Resource kinds</dt>
        <dd>{listOrNone(runner.resources)}</dd>
        <dt>Effects it may cause by itself</dt>
        <dd>{listOrNone(runner.effects)}</dd>
        <dt>Default limits</dt>
        <dd>{limits.length ? limits.map(([k, v]) => `${k} ${v}`).join(', ') : <span class="muted">none</span>}</dd>
        <dt>Folder</dt>
        <dd class="mono">{runner.dir}</dd>
        <dt>Source</dt>
        <dd>{runner.source}</dd>
      </dl>
      <h2>Bindings of this tenant that use it</h2>
      <BindingLinks bindings={bindings} />
    </>
  );
}
