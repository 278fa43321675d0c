// The console: sign-in until there is a session, then the navigation and the page the hash names.
import { useCallback, useEffect, useState } from 'preact/hooks';
import type { ApiError } from './lib/api.js';
import { href, useRoute } from './lib/route.js';
import { forgetToken, signIn, storedToken, type Session } from './lib/session.js';
import { ErrorNote } from './components/ErrorNote.js';
import { PAGES, pageFor } from './pages/index.js';
import { SignIn } from './pages/SignIn.js';

/** The whole console. */
export function App() {
  const [session, setSession] = useState<Session>();
  const [reason, setReason] = useState<ApiError>();
  const [resuming, setResuming] = useState(() => storedToken() !== undefined);
  const route = useRoute();

  const signOut = useCallback((why?: ApiError) => {
    forgetToken();
    setSession(undefined);
    setReason(why);
  }, []);
  const start = useCallback(async (token: string) => setSession(await signIn(token, signOut)), [signOut]);

  // A reload keeps the tab's token: sign in with it again (the API may have revoked it since).
  useEffect(() => {
    const token = storedToken();
    if (!token) return;
    start(token)
      .catch((error: ApiError) => signOut(error))
      .finally(() => setResuming(false));
  }, [start, signOut]);

  if (resuming) return <p class="boot">Signing in…</p>;
  if (!session) return <SignIn onSignIn={start} reason={reason} />;

  const page = pageFor(route.page, session.who.role);
  const visible = PAGES.filter((p) => p.visible(session.who.role));
  return (
    <div class="layout">
      {/* Not href="#main": the hash is the console's route, so the link moves the focus itself. */}
      <a
        class="skip"
        href="#main"
        onClick={(e) => {
          e.preventDefault();
          document.getElementById('main')?.focus();
        }}
      >
        Skip to content
      </a>
      <header class="top">
        <span class="brand">paddock</span>
        <span class="who">
          {session.who.name || session.who.tokenId} · <strong>{session.who.role}</strong> of tenant{' '}
          <strong>{session.who.tenant}</strong>
        </span>
        <button type="button" onClick={() => signOut()}>
          Sign out
        </button>
      </header>
      <nav aria-label="Pages">
        <ul>
          {visible.map((p) => (
            <li key={p.name}>
              <a href={href(p.name)} aria-current={p.name === page?.name ? 'page' : undefined}>
                {p.title}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" tabIndex={-1}>
        {visible.length === 0 ? (
          <>
            <h1>No console for this token</h1>
            <p>
              A {session.who.role} token is a bot platform's: the console has no page for it. Sign out and sign in with
              an admin, approver or viewer token.
            </p>
          </>
        ) : page ? (
          <page.component session={session} params={route.params} />
        ) : (
          <>
            <h1>Not found</h1>
            <ErrorNote error={new Error(`There is no page "${route.page}" for a ${session.who.role} token.`)} />
          </>
        )}
      </main>
    </div>
  );
}
