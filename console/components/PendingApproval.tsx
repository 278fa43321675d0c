// One pending approval: its sentence, the runner's summary (as text), and — for approvers and admins — approve
// with a grant lifetime no longer than asked, or deny (confirmed), each with an optional reason.
import { useState } from 'preact/hooks';
import { LIFETIME_TEXT, lifetimesFor, type Approval, type Lifetime } from '../lib/approvals.js';
import type { Session } from '../lib/session.js';
import { can } from '../lib/session.js';
import { ApprovalSentence } from './ApprovalSentence.js';
import { ConfirmButton } from './Confirm.js';
import { ErrorNote } from './ErrorNote.js';
import { Time } from './Time.js';

/** The card of pending approval `approval`; `onDecided` reloads the page's lists. */
export function PendingApproval(props: {
  session: Session;
  approval: Approval;
  runner?: string;
  /** How many pending approvals share its group (itself included). */
  groupSize: number;
  onDecided: () => void;
}) {
  const { session, approval: a } = props;
  const [lifetime, setLifetime] = useState<Lifetime>('once');
  const [reason, setReason] = useState('');
  const [group, setGroup] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const base = `/v1/approvals/${encodeURIComponent(a.id)}`;
  const body = (extra: object) => ({
    ...(reason.trim() ? { reason: reason.trim() } : {}),
    ...(group ? { group } : {}),
    ...extra,
  });
  const approve = async () => {
    setBusy(true);
    setError(undefined);
    try {
      await session.api.post(`${base}/approve`, body({ lifetime }));
      props.onDecided();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  const id = (name: string) => `${name}-${a.id}`;
  const denyText =
    `The run is told no${group ? ', for every ask of its group' : ''}; it may go on without the action or end. ` +
    (reason.trim() ? `Reason given: "${reason.trim()}".` : 'No reason given.');
  return (
    <li class="card approval" data-approval={a.id}>
      <ApprovalSentence approval={a} runner={props.runner} />
      {a.summary ? (
        <blockquote class="summary" aria-label="The runner's summary">
          {a.summary}
        </blockquote>
      ) : null}
      <p class="muted">
        Expires <Time at={a.expiresAt} relative /> · binding {a.bindingId} · asked for at most{' '}
        <strong>{a.requestedLifetime}</strong> · <code>{a.id}</code>
      </p>
      {can.decide(session.who.role) ? (
        <div class="form decide">
          <div class="row">
            <label for={id('lifetime')}>Approve</label>
            <select
              id={id('lifetime')}
              value={lifetime}
              onChange={(e) => setLifetime((e.target as HTMLSelectElement).value as Lifetime)}
            >
              {lifetimesFor(a.requestedLifetime).map((l) => (
                <option key={l} value={l}>
                  {l}: {LIFETIME_TEXT[l]}
                </option>
              ))}
            </select>
          </div>
          <div class="row">
            <label for={id('reason')}>Reason (optional)</label>
            <input
              id={id('reason')}
              value={reason}
              maxLength={1000}
              onInput={(e) => setReason((e.target as HTMLInputElement).value)}
            />
          </div>
          {a.groupId && props.groupSize > 1 ? (
            <div class="row">
              <input
                id={id('group')}
                type="checkbox"
                checked={group}
                onChange={(e) => setGroup((e.target as HTMLInputElement).checked)}
              />
              <label for={id('group')}>Decide its whole group ({props.groupSize} low-risk asks of this run)</label>
            </div>
          ) : null}
          <div class="actions">
            {lifetime === 'once' ? (
              <button type="button" class="primary" disabled={busy} onClick={() => void approve()}>
                {busy ? 'Working…' : 'Approve'}
              </button>
            ) : (
              // A lasting grant answers later asks by itself: asked first, naming how far it reaches.
              <ConfirmButton
                label="Approve"
                question={`Approve ${a.effect} of ${a.target.value} for the whole ${lifetime}?`}
                confirmLabel="Approve and grant"
                action={() => session.api.post(`${base}/approve`, body({ lifetime }))}
                onDone={props.onDecided}
              >
                <p>{`${LIFETIME_TEXT[lifetime]}. It can be revoked under "Live grants".`}</p>
              </ConfirmButton>
            )}
            <ConfirmButton
              label="Deny"
              question={`Deny ${a.effect} of ${a.target.value}?`}
              confirmLabel="Deny it"
              danger
              action={() => session.api.post(`${base}/deny`, body({}))}
              onDone={props.onDecided}
            >
              <p>{denyText}</p>
            </ConfirmButton>
          </div>
          <ErrorNote error={error} action="Approve" />
        </div>
      ) : null}
    </li>
  );
}
