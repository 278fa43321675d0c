// The host's worst case for a binding (GET /v1/bindings/{id}/explain): what a run may read, write and reach, what
// the sandbox enforces and what it does NOT, and anything degraded — the last two in red.
import type { Explanation } from './configTypes.js';
import { listOrNone } from './configText.js';

/** Items as a list, each with `cls`; `empty` when there are none. */
function Items({ items, cls, empty }: { items: string[]; cls?: string; empty: string }) {
  if (items.length === 0) return <p class="muted">{empty}</p>;
  return (
    <ul class={cls}>
      {items.map((item, i) => (
        <li key={i}>{item}</li>
      ))}
    </ul>
  );
}

/** The explanation, in sections. */
export function ExplainView({ e }: { e: Explanation }) {
  const s = e.sandbox;
  const report = s.report;
  const a = e.access;
  return (
    <section aria-labelledby="explain-h">
      <h2 id="explain-h">Worst case, as the host computes it</h2>
      {s.degraded.length > 0 ? (
        <div class="degraded-box" role="note">
          <strong>Degraded:</strong>
          <Items items={s.degraded.map((d) => `DEGRADED: ${d}`)} cls="degraded" empty="" />
        </div>
      ) : null}
      {!s.available ? (
        <p class="degraded">
          Sandbox {s.profile} is NOT available here: runs of this binding are refused.
          {s.refusal ? ` ${s.refusal}` : ''}
        </p>
      ) : null}
      <dl class="facts">
        <dt>Sandbox</dt>
        <dd>
          {s.profile}
          {s.backend && s.backend !== s.profile ? ` → runs with ${s.backend}` : ''}
          {report ? (
            <>
              {' '}
              <span class={`badge ${report.strength === 'strong' ? 'ok' : 'bad'}`}>{report.strength}</span>
            </>
          ) : null}
        </dd>
        <dt>Can read</dt>
        <dd>
          <Items items={e.worstCase.readable} empty="nothing" />
        </dd>
        <dt>Can write</dt>
        <dd>
          <Items items={e.worstCase.writable} empty="nothing" />
        </dd>
        <dt>Network</dt>
        <dd>{e.worstCase.network}</dd>
        <dt>Credentials</dt>
        <dd>{e.worstCase.credentials}</dd>
        <dt>Host identity</dt>
        <dd>{e.worstCase.hostIdentity}</dd>
        <dt>Runner risk</dt>
        <dd>{'missing' in e.runner ? e.runner.missing : e.runner.risk || <span class="muted">no risk note</span>}</dd>
        <dt>Effects it may cause by itself</dt>
        <dd>{listOrNone(e.effects)}</dd>
        {a ? (
          <>
            <dt>Host requests it may call</dt>
            <dd>{listOrNone(a.hostRequests)}</dd>
            <dt>State · files · approvals</dt>
            <dd>
              state {a.state} · fs requests {a.fs} · approval requests {a.approval ? 'yes' : 'no'}
            </dd>
          </>
        ) : null}
      </dl>
      {report ? (
        <div class="enforcement">
          <div>
            <h3>Enforced by {report.backend}</h3>
            <Items items={report.enforced} cls="enforced" empty="nothing" />
          </div>
          <div>
            <h3 class="not-enforced">NOT enforced</h3>
            <Items items={report.notEnforced} cls="not-enforced" empty="nothing: every guard above holds" />
          </div>
        </div>
      ) : null}
      {e.missingSecrets.length > 0 ? (
        <>
          <h3 class="degraded">Missing secrets</h3>
          <Items items={e.missingSecrets} cls="degraded" empty="" />
        </>
      ) : null}
      <h3>Granted or requested but withheld</h3>
      <Items items={e.withheld.map((w) => `${w.what} — ${w.why}`)} empty="nothing is withheld" />
      {e.workspace && e.workspace.contents.length > 0 ? (
        <>
          <h3>Workspace contents ({e.workspace.mode})</h3>
          <Items items={e.workspace.contents} empty="" />
        </>
      ) : null}
    </section>
  );
}
