// Tokens of the signed-in tenant (admin only): who holds what role, when each was last used; create one (its
// secret is shown this once) and revoke one (confirmed; refused by every server from the next request on).
import { useState } from 'preact/hooks';
import { ConfirmButton } from '../components/Confirm.js';
import { ErrorNote } from '../components/ErrorNote.js';
import { Table } from '../components/Table.js';
import { Time } from '../components/Time.js';
import { useLoad } from '../lib/useLoad.js';
import type { Role } from '../lib/session.js';
import type { PageProps } from './index.js';

/** A token as `GET /v1/tokens` lists it (never its secret). */
export interface TokenInfo {
  id: string;
  tenant: string;
  role: Role;
  name: string;
  createdAt: string;
  createdBy: string;
  expiresAt: string | null;
  revokedAt: string | null;
  revokedBy: string | null;
  lastUsedAt: string | null;
}

const ROLES: { role: Role; what: string }[] = [
  { role: 'viewer', what: 'reads this tenant’s runs, sessions, bindings, approvals and audit; changes nothing' },
  { role: 'approver', what: 'reads runs and sessions; approves and denies approvals, revokes grants' },
  { role: 'platform', what: 'a bot platform: dispatches events, reads and cancels its runs' },
  { role: 'admin', what: 'everything in this tenant, tokens included' },
];

function state(t: TokenInfo) {
  if (t.revokedAt) return <span class="badge bad">revoked</span>;
  if (t.expiresAt && new Date(t.expiresAt).getTime() <= Date.now()) return <span class="badge warn">expired</span>;
  return <span class="badge ok">active</span>;
}

/** The tokens page. */
export function Tokens({ session }: PageProps) {
  const list = useLoad((signal) => session.api.get<{ tokens: TokenInfo[] }>('/v1/tokens', signal), [session]);
  return (
    <>
      <h1>Tokens</h1>
      <p class="muted">
        API tokens of tenant <strong>{session.who.tenant}</strong>. paddock keeps only a hash of each; a token’s secret
        is shown once, when it is made.
      </p>
      <CreateToken session={session} onCreated={list.reload} />
      <h2>All tokens</h2>
      <ErrorNote error={list.error} action="Listing the tokens" />
      {list.data ? (
        <Table
          rows={list.data.tokens}
          rowKey={(t) => t.id}
          empty="No tokens."
          columns={[
            {
              title: 'Name',
              cell: (t) => (
                <>
                  {t.name || <span class="muted">(no name)</span>}
                  {t.id === session.who.tokenId ? <span class="badge"> this session</span> : null}
                </>
              ),
            },
            { title: 'Id', cell: (t) => <code>{t.id}</code> },
            { title: 'Role', cell: (t) => t.role },
            { title: 'State', cell: state },
            { title: 'Created', cell: (t) => <Time at={t.createdAt} /> },
            { title: 'Expires', cell: (t) => (t.expiresAt ? <Time at={t.expiresAt} /> : 'never') },
            { title: 'Last used', cell: (t) => (t.lastUsedAt ? <Time at={t.lastUsedAt} relative /> : 'never') },
            {
              title: 'Action',
              cell: (t) =>
                t.revokedAt ? (
                  <span class="muted">
                    by {t.revokedBy} <Time at={t.revokedAt} relative />
                  </span>
                ) : (
                  <ConfirmButton
                    label="Revoke"
                    danger
                    question={`Revoke token “${t.name || t.id}”?`}
                    confirmLabel="Revoke token"
                    action={() => session.api.post(`/v1/tokens/${encodeURIComponent(t.id)}/revoke`)}
                    onDone={list.reload}
                  >
                    <p>
                      Every request with this {t.role} token is refused from now on, on every server of this data
                      folder. It cannot be undone: make a new token instead.
                      {t.id === session.who.tokenId
                        ? ' This is the token you are signed in with: you will be signed out.'
                        : ''}
                    </p>
                  </ConfirmButton>
                ),
            },
          ]}
        />
      ) : null}
    </>
  );
}

/** The form that makes a token, and the new token shown once. */
function CreateToken({ session, onCreated }: { session: PageProps['session']; onCreated: () => void }) {
  const [role, setRole] = useState<Role>('viewer');
  const [name, setName] = useState('');
  const [expiresIn, setExpiresIn] = useState('30d');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const [made, setMade] = useState<{ token: string; info: TokenInfo }>();
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const body = { role, ...(name ? { name } : {}), ...(expiresIn ? { expiresIn } : {}) };
      const created = await session.api.post<TokenInfo & { token: string }>('/v1/tokens', body);
      const { token, ...info } = created;
      setMade({ token, info });
      setName('');
      onCreated();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section aria-labelledby="new-token">
      <h2 id="new-token">New token</h2>
      <form class="form" onSubmit={(e) => void submit(e)}>
        <label for="token-role">Role</label>
        <select id="token-role" value={role} onChange={(e) => setRole(e.currentTarget.value as Role)}>
          {ROLES.map((r) => (
            <option key={r.role} value={r.role}>
              {r.role} — {r.what}
            </option>
          ))}
        </select>
        <label for="token-name">Name</label>
        <input id="token-name" value={name} maxLength={200} onInput={(e) => setName(e.currentTarget.value)} />
        <label for="token-expiry">Expires in</label>
        <input
          id="token-expiry"
          value={expiresIn}
          placeholder="30d, 12h, 90m; empty: never"
          onInput={(e) => setExpiresIn(e.currentTarget.value.trim())}
        />
        <div>
          <button type="submit" class="primary" disabled={busy}>
            {busy ? 'Creating…' : 'Create token'}
          </button>
        </div>
      </form>
      <ErrorNote error={error} action="Creating the token" />
      {made ? (
        <div class="notice" role="status">
          <p>
            <strong>
              {made.info.role} token “{made.info.name || made.info.id}” created. Copy it now: it is not shown again.
            </strong>
          </p>
          <label for="made-token">Token</label>
          <input
            id="made-token"
            class="mono"
            readOnly
            value={made.token}
            size={60}
            onFocus={(e) => e.currentTarget.select()}
          />
          <div class="actions">
            <button type="button" onClick={() => setMade(undefined)}>
              I have copied it
            </button>
          </div>
        </div>
      ) : null}
    </section>
  );
}
