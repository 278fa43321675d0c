// An error from the API shown with its reason: the problem's title, detail and every field it names.
import { ApiError } from '../lib/api.js';

/** A short sentence of an error (for inline places). */
export function errorText(error: unknown): string {
  if (error instanceof ApiError) return error.detail ? `${error.title}: ${error.detail}` : error.title;
  return error instanceof Error ? error.message : String(error);
}

/** The error, with what it was doing (`action`), as an alert. Nothing when there is no error. */
export function ErrorNote({ error, action }: { error: unknown; action?: string }) {
  if (error === undefined || error === null) return null;
  const api = error instanceof ApiError ? error : undefined;
  return (
    <div class="error" role="alert">
      <strong>
        {action ? `${action} failed: ` : ''}
        {api ? api.title : 'Something went wrong'}
      </strong>
      {api && api.status > 0 ? (
        <span class="muted">
          {' '}
          (HTTP {api.status}, {api.code})
        </span>
      ) : null}
      <div>{api ? api.detail : errorText(error)}</div>
      {api && api.errors.length > 0 ? (
        <ul>
          {api.errors.map((e) => (
            <li key={e.path}>
              <code>{e.path || '(body)'}</code>: {e.message}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}
