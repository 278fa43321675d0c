// One binding: route, grants, limits, sandbox and network as stored; the host's worst-case explanation; the
// enable/disable switch (admin); its recorded changes. From GET /v1/bindings/{id} and GET /v1/bindings/{id}/explain.
import { ErrorNote } from '../components/ErrorNote.js';
import { Table } from '../components/Table.js';
import { Time } from '../components/Time.js';
import { href } from '../lib/route.js';
import { can, type Session } from '../lib/session.js';
import { useLoad } from '../lib/useLoad.js';
import { BindingSwitch } from './BindingSwitch.js';
import { EnabledBadge, listOrNone, routeText } from './configText.js';
import { isEnabled, textOf, type BindingShow, type BindingSpec, type Explanation } from './configTypes.js';
import { ExplainView } from './ExplainView.js';

/** The grants of a binding, one fact each. */
function Grants({ grants }: { grants: BindingSpec['grants'] }) {
  const g = grants ?? {};
  const ids = (v: unknown) =>
    listOrNone(Array.isArray(v) ? v.map((x) => (typeof x === 'string' ? x : mcpGrant(x))) : undefined);
  return (
    <dl class="facts">
      <dt>Models</dt>
      <dd>{ids(g.models)}</dd>
      <dt>Knowledge bases</dt>
      <dd>{ids(g.knowledgeBases)}</dd>
      <dt>MCP servers</dt>
      <dd>{ids(g.mcpServers)}</dd>
      <dt>Skills</dt>
      <dd>{ids(g.skills)}</dd>
      <dt>Artifacts</dt>
      <dd>{ids(g.artifacts)}</dd>
      <dt>Mounts</dt>
      <dd>{ids(g.mounts)}</dd>
      <dt>State</dt>
      <dd>{textOf(g.state ?? 'none')}</dd>
      <dt>File requests</dt>
      <dd>{textOf(g.fs ?? 'none')}</dd>
      <dt>Approval requests</dt>
      <dd>{g.approval ? 'yes' : 'no'}</dd>
      <dt>Conversation history</dt>
      <dd>{historyText(g.history)}</dd>
    </dl>
  );
}

/** An MCP grant `{ id, tools }` as "id (tools: a, b)". */
function mcpGrant(grant: unknown): string {
  const g = grant as { id?: unknown; tools?: unknown };
  const tools = Array.isArray(g.tools) ? ` (tools: ${g.tools.map(String).join(', ')})` : '';
  return `${String(g.id)}${tools}`;
}

/** The history grant in words. */
function historyText(h: unknown): string {
  if (h === undefined || h === 'none') return 'none (each run sees only its own message)';
  const w = h as { messages?: number; tokens?: number };
  const parts = [
    w.messages !== undefined && `${w.messages} messages`,
    w.tokens !== undefined && `≤ ${w.tokens} tokens`,
  ];
  return `the last ${parts.filter(Boolean).join(', ')} of the conversation`;
}

/** The binding detail page. */
export function BindingDetail({ session, id }: { session: Session; id: string }) {
  const path = `/v1/bindings/${encodeURIComponent(id)}`;
  const binding = useLoad((signal) => session.api.get<BindingShow>(path, signal), [session, id]);
  const explain = useLoad((signal) => session.api.get<Explanation>(`${path}/explain`, signal), [session, id]);
  const reload = () => {
    binding.reload();
    explain.reload();
  };
  const b = binding.data;
  const limits = explain.data?.limits ?? b?.spec.limits ?? {};
  return (
    <>
      <p>
        <a href={href('bindings')}>All bindings</a>
      </p>
      <h1>
        Binding {id} {b ? <EnabledBadge enabled={isEnabled(b.spec)} /> : null}
      </h1>
      <ErrorNote error={binding.error} action="Loading the binding" />
      {!b ? (
        binding.loading ? (
          <p class="muted">Loading…</p>
        ) : null
      ) : (
        <>
          {b.spec.description ? <p class="description">{b.spec.description}</p> : null}
          {can.administer(session.who.role) ? (
            <BindingSwitch session={session} id={id} enabled={isEnabled(b.spec)} onChanged={reload} />
          ) : null}
          <dl class="facts">
            <dt>Runner</dt>
            <dd>
              <a href={href('runners', b.spec.runner)}>{b.spec.runner}</a>
            </dd>
            <dt>Route</dt>
            <dd>{routeText(b.spec.route)}</dd>
            <dt>Steering</dt>
            <dd>
              {b.spec.steering ?? 'queue'}
              {explain.data?.binding.steeringNote ? ` (${explain.data.binding.steeringNote})` : ''}
            </dd>
            <dt>Approvals</dt>
            <dd>{b.spec.approvalPolicy ?? 'deny'}</dd>
            <dt>Sandbox profile</dt>
            <dd>
              {b.spec.sandbox ?? 'bwrap'}
              {b.spec.allowDegrade ? (
                <>
                  {' '}
                  <span class="badge warn">may degrade</span>
                </>
              ) : null}
            </dd>
            <dt>Network egress</dt>
            <dd>
              {listOrNone(b.spec.network?.egress)}
              {b.spec.network?.allowPrivate ? (
                <>
                  {' '}
                  <span class="badge warn">private addresses allowed</span>
                </>
              ) : null}
            </dd>
            <dt>Workspace</dt>
            <dd>{b.spec.workspace ?? 'copy'}</dd>
            <dt>Read paths</dt>
            <dd>{listOrNone(b.spec.readPaths)}</dd>
            <dt>Version</dt>
            <dd>
              {b.version}, changed <Time at={b.updatedAt} />
            </dd>
          </dl>
          <ErrorNote error={explain.error} action="Explaining the binding" />
          {explain.data ? <ExplainView e={explain.data} /> : null}
          <h2>Grants</h2>
          <Grants grants={b.spec.grants} />
          <h2>Limits</h2>
          <p class="hint">
            {explain.data ? "In effect (the binding's, the runner's defaults, capped by the host's)." : 'As stored.'}
          </p>
          <Table
            rows={Object.entries(limits)}
            rowKey={([k]) => k}
            empty="No limits."
            columns={[
              { title: 'Limit', cell: ([k]) => <span class="mono">{k}</span> },
              { title: 'Value', cell: ([, v]) => v.toLocaleString(), numeric: true },
            ]}
          />
        </>
      )}
      {b ? (
        <>
          <h2>Changes</h2>
          <Table
            rows={b.history}
            rowKey={(h) => `${h.version}-${h.at}`}
            empty="No recorded changes."
            columns={[
              { title: 'Version', cell: (h) => String(h.version), numeric: true },
              { title: 'Change', cell: (h) => h.action },
              { title: 'By', cell: (h) => h.by },
              { title: 'At', cell: (h) => <Time at={h.at} /> },
            ]}
          />
          <details>
            <summary>Stored spec (JSON)</summary>
            <pre>{JSON.stringify(b.spec, null, 2)}</pre>
          </details>
        </>
      ) : null}
    </>
  );
}
