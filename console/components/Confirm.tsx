// A destructive action behind a confirmation that names what it does; the API's answer (or its error, with the
// reason) is shown next to the button.
import type { ComponentChildren } from 'preact';
import { useRef, useState } from 'preact/hooks';
import { ErrorNote } from './ErrorNote.js';

/** A button that asks "`question`" in a modal dialog before it runs `action`. */
export function ConfirmButton(props: {
  label: string;
  question: string;
  /** What the dialog explains under the question (what happens, whether it can be undone). */
  children?: ComponentChildren;
  confirmLabel?: string;
  danger?: boolean;
  action: () => Promise<unknown>;
  onDone?: () => void;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const run = async () => {
    setBusy(true);
    setError(undefined);
    try {
      await props.action();
      dialog.current?.close();
      props.onDone?.();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <button type="button" class={props.danger ? 'danger' : undefined} onClick={() => dialog.current?.showModal()}>
        {props.label}
      </button>
      <dialog ref={dialog} aria-label={props.question} onClose={() => setError(undefined)}>
        <h2>{props.question}</h2>
        {props.children}
        <ErrorNote error={error} action={props.label} />
        <div class="actions">
          <button type="button" onClick={() => dialog.current?.close()} disabled={busy}>
            Keep as it is
          </button>
          <button type="button" class={props.danger ? 'danger' : 'primary'} onClick={() => void run()} disabled={busy}>
            {busy ? 'Working…' : (props.confirmLabel ?? props.label)}
          </button>
        </div>
      </dialog>
    </>
  );
}
