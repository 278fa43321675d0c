// The enable/disable switch of a binding (admin only): disabling asks whether to cancel its active runs too; both are
// confirmed, and what the host did (runs asked to cancel) is said afterwards.
import { useState } from 'preact/hooks';
import { ConfirmButton } from '../components/Confirm.js';
import { plural } from '../lib/format.js';
import type { Session } from '../lib/session.js';
import type { EnableAnswer } from './configTypes.js';

/** The button that flips binding `id` (enabled now: `enabled`); `onChanged` reloads the page's data. */
export function BindingSwitch(props: { session: Session; id: string; enabled: boolean; onChanged: () => void }) {
  const [cancelActive, setCancelActive] = useState(false);
  const [done, setDone] = useState<EnableAnswer>();
  const path = `/v1/bindings/${encodeURIComponent(props.id)}/${props.enabled ? 'disable' : 'enable'}`;
  const flip = async () => {
    const answer = await props.session.api.post<EnableAnswer>(path, props.enabled ? { cancelActive } : {});
    setDone(answer);
  };
  return (
    <div class="switch">
      {props.enabled ? (
        <ConfirmButton
          label="Disable binding"
          question={`Disable binding "${props.id}"?`}
          confirmLabel={cancelActive ? 'Disable and cancel runs' : 'Disable'}
          danger
          action={flip}
          onDone={props.onChanged}
        >
          <p>New events for this binding will be refused (binding_disabled) until it is enabled again.</p>
          <label class="check">
            <input type="checkbox" checked={cancelActive} onChange={(e) => setCancelActive(e.currentTarget.checked)} />
            {' Cancel active runs'} <span class="hint">(its queued and running runs are asked to stop)</span>
          </label>
        </ConfirmButton>
      ) : (
        <ConfirmButton
          label="Enable binding"
          question={`Enable binding "${props.id}"?`}
          confirmLabel="Enable"
          action={flip}
          onDone={props.onChanged}
        >
          <p>Events its route matches will start runs again. The configuration is validated first.</p>
        </ConfirmButton>
      )}
      {done ? (
        <p class="notice" role="status">
          {done.enabled ? 'Enabled' : 'Disabled'} binding {done.bindingId}
          {done.changed ? '' : ' (it already was)'}
          {done.enabled
            ? '.'
            : `; ${plural(done.cancelRequested, 'active run')} asked to cancel` +
              (done.cancelledRunIds.length ? `: ${done.cancelledRunIds.join(', ')}.` : '.')}
        </p>
      ) : null}
    </div>
  );
}
