// Bindings: the tenant's bindings (route, runner, sandbox, network, enabled); `#/bindings/<id>` shows one with the
// host's worst-case explanation and the enable/disable switch. From GET /v1/bindings.
import { ErrorNote } from '../components/ErrorNote.js';
import { Table } from '../components/Table.js';
import { Time } from '../components/Time.js';
import { href } from '../lib/route.js';
import { useLoad } from '../lib/useLoad.js';
import { BindingDetail } from './BindingDetail.js';
import { EnabledBadge, listOrNone, routeText } from './configText.js';
import { isEnabled, type BindingObject } from './configTypes.js';
import type { PageProps } from './index.js';

/** The bindings page (a list, or one binding when the route names it). */
export function Bindings(props: PageProps) {
  const id = props.params[0];
  return id ? <BindingDetail key={id} session={props.session} id={id} /> : <BindingList {...props} />;
}

/** Every binding of the tenant. */
function BindingList({ session }: PageProps) {
  const load = useLoad((signal) => session.api.get<BindingObject[]>('/v1/bindings', signal), [session]);
  return (
    <>
      <h1>Bindings</h1>
      <p class="hint">A binding routes chat events to a runner with its grants, limits and sandbox.</p>
      {load.data ? (
        <Table
          caption={`Bindings of tenant ${session.who.tenant}`}
          rows={load.data}
          rowKey={(b) => b.id}
          empty="This tenant has no binding yet (paddock apply, or POST /v1/config/apply)."
          columns={[
            { title: 'Binding', cell: (b) => <a href={href('bindings', b.id)}>{b.id}</a> },
            { title: 'State', cell: (b) => <EnabledBadge enabled={isEnabled(b.spec)} /> },
            { title: 'Runner', cell: (b) => <a href={href('runners', b.spec.runner)}>{b.spec.runner}</a> },
            { title: 'Route', cell: (b) => routeText(b.spec.route) },
            { title: 'Sandbox', cell: (b) => b.spec.sandbox ?? 'bwrap' },
            { title: 'Network', cell: (b) => listOrNone(b.spec.network?.egress) },
            { title: 'Version', cell: (b) => String(b.version), numeric: true },
            { title: 'Changed', cell: (b) => <Time at={b.updatedAt} relative /> },
          ]}
        />
      ) : load.loading ? (
        <p class="muted">Loading…</p>
      ) : null}
      <ErrorNote error={load.error} action="Loading bindings" />
    </>
  );
}
