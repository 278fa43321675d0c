// The console's only way to the host: the public HTTP API (docs/http-api.md) with the signed-in token as a bearer
// header. Errors come back as the API's problem documents, kept whole so every page can show their reason.

/** One field a request got wrong (the API's `errors[]`). */
export interface FieldError {
  path: string;
  message: string;
}

/** A call the API refused or could not answer: the problem document's status, code, title and detail. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    readonly title: string,
    readonly detail: string,
    readonly errors: FieldError[] = [],
  ) {
    super(detail ? `${title}: ${detail}` : title);
  }
}

/** An authenticated client of the API. */
export interface Api {
  get<T>(path: string, signal?: AbortSignal): Promise<T>;
  post<T>(path: string, body?: unknown): Promise<T>;
  /** A raw authenticated request (streams, exports): the response, or an ApiError when it is not 2xx. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
}

/** What a problem document may hold. */
interface Problem {
  code?: unknown;
  title?: unknown;
  detail?: unknown;
  errors?: unknown;
}

/** The ApiError of a non-2xx response (a problem document when the server sent one; the status otherwise). */
export async function errorOf(res: Response): Promise<ApiError> {
  let problem: Problem = {};
  try {
    const text = await res.text();
    if (text) problem = JSON.parse(text) as Problem;
  } catch {
    // Not JSON (a proxy's page, a cut connection): the status line is all there is.
  }
  const text = (v: unknown, fallback: string) => (typeof v === 'string' ? v : fallback);
  const errors = Array.isArray(problem.errors)
    ? problem.errors.filter(
        (e): e is FieldError =>
          typeof e === 'object' &&
          e !== null &&
          typeof (e as FieldError).path === 'string' &&
          typeof (e as FieldError).message === 'string',
      )
    : [];
  return new ApiError(
    res.status,
    text(problem.code, `http_${res.status}`),
    text(problem.title, res.statusText || `HTTP ${res.status}`),
    text(problem.detail, ''),
    errors,
  );
}

/**
 * A client with `token` as its bearer. `onUnauthorized` hears every 401 (a revoked or expired token): the console
 * then forgets the token and returns to sign-in with the API's reason.
 */
export function createApi(token: string, onUnauthorized: (error: ApiError) => void): Api {
  const call = async (path: string, init: RequestInit = {}): Promise<Response> => {
    // An id from the URL's hash is encoded into the path, but `.` and `..` survive encoding and the browser would
    // resolve them (`/v1/runs/..` is `/v1/`): a crafted console link must not reach another route (outside attack on
    // issue 15, finding 6).
    if (
      path
        .split('?')[0]!
        .split('/')
        .some((segment) => segment === '.' || segment === '..')
    )
      throw new ApiError(0, 'invalid_path', 'Not a valid id', `"." and ".." are not ids (${path})`);
    const headers = new Headers(init.headers);
    headers.set('authorization', `Bearer ${token}`);
    let res: Response;
    try {
      res = await fetch(path, { ...init, headers, cache: 'no-store' });
    } catch (error) {
      if (init.signal?.aborted) throw error;
      throw new ApiError(0, 'network', 'The server could not be reached', String(error));
    }
    if (res.ok) return res;
    const error = await errorOf(res);
    if (res.status === 401) onUnauthorized(error);
    throw error;
  };
  const json = async <T>(res: Response): Promise<T> => {
    const text = await res.text();
    return (text ? JSON.parse(text) : undefined) as T;
  };
  return {
    fetch: call,
    get: async (path, signal) => json(await call(path, { signal })),
    post: async (path, body) =>
      json(
        await call(path, {
          method: 'POST',
          headers: body === undefined ? {} : { 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        }),
      ),
  };
}
