// Sign-in: an API token (`pdk_…`), checked with the API before it is kept.
import { useState } from 'preact/hooks';
import { ErrorNote } from '../components/ErrorNote.js';

/** The sign-in form; `reason` is why the last session ended (a revoked or expired token). */
export function SignIn(props: { onSignIn: (token: string) => Promise<void>; reason?: unknown }) {
  const [token, setToken] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(props.reason);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await props.onSignIn(token.trim());
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  };
  return (
    <main class="signin" id="main">
      <h1>paddock console</h1>
      <form onSubmit={(e) => void submit(e)}>
        <label for="token">API token</label>
        <input
          id="token"
          name="token"
          type="password"
          autoComplete="off"
          spellcheck={false}
          placeholder="pdk_…"
          required
          value={token}
          onInput={(e) => setToken(e.currentTarget.value)}
        />
        <p class="hint">
          An admin, approver or viewer token from <code>paddock tokens create</code>. It is kept in this tab only and
          sent to this server alone.
        </p>
        <button type="submit" class="primary" disabled={busy || token.trim() === ''}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      <ErrorNote error={error} action="Sign-in" />
    </main>
  );
}
