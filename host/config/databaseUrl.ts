/**
 * The PostgreSQL store's URL (`PADDOCK_DATABASE_URL`, `--database-url`, `HostConfig.databaseUrl`; docs/scale-out.md,
 * docs/admin-guide.md "PostgreSQL"). It is a secret — it may hold a password — so nothing here ever puts the value in
 * an error, and {@link shownDatabaseUrl} is the only form anything prints.
 */
import { HostError } from '../errors.js';

/** The URL forms libpq and node-postgres both read: `postgresql://user@host:port/db?…`, `postgres://…`. */
const SCHEMES = new Set(['postgres:', 'postgresql:']);

const EXAMPLE = 'postgresql://user@host:5432/paddock (or postgresql:///paddock?host=/socket/folder)';

/** Query parameters libpq takes a secret from (a socket URL cannot carry a password in its user info). */
const SECRET_PARAMETERS = ['password', 'sslpassword'];

/** The URL's secrets as written: its user-info password and its secret query parameters. */
function secretsOf(url: URL): string[] {
  const found = [url.password, ...SECRET_PARAMETERS.map((name) => url.searchParams.get(name) ?? '')];
  return found.filter((secret) => secret !== '');
}

/**
 * `text` checked as a PostgreSQL URL, or undefined when unset (an empty value counts as unset, as `PADDOCK_HOME`'s
 * does). A malformed one is a `CONFIG_INVALID` error naming `field` (the variable, flag or config field) and never
 * quoting the value. `noPassword`: refuse one with a password (a command-line flag is visible to every user of the
 * machine).
 */
export function parseDatabaseUrl(
  text: string | undefined,
  field: string,
  options: { noPassword?: boolean } = {},
): string | undefined {
  if (text === undefined || text === '') return undefined;
  const refuse = (why: string) =>
    new HostError('CONFIG_INVALID', `${field} is not a PostgreSQL URL: ${why}; expected ${EXAMPLE}`, { field });
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw refuse('it does not parse as a URL (several hosts in one URL are not supported; the value is not shown)');
  }
  // The scheme is shown only when it is a plain word: it never holds a credential then.
  if (!SCHEMES.has(url.protocol))
    throw refuse(/^[a-z][a-z0-9+.-]{0,20}:$/i.test(url.protocol) ? `its scheme is ${url.protocol}` : 'no scheme');
  if (url.pathname.length <= 1 || url.pathname.slice(1).includes('/'))
    throw refuse('it names no database (the path after the host, e.g. /paddock)');
  if (options.noPassword && secretsOf(url).length > 0)
    throw new HostError(
      'CONFIG_INVALID',
      `${field} holds a password, which every user of this machine could read on the command line; give it in ` +
        'PADDOCK_DATABASE_URL, PGPASSWORD or ~/.pgpass instead',
      { field },
    );
  return text;
}

/** The URL as it may be shown (doctor, logs): its password (user info or query parameter) replaced by `***`. */
export function shownDatabaseUrl(text: string): string {
  const url = new URL(text);
  if (url.password !== '') url.password = '***';
  for (const name of SECRET_PARAMETERS) if (url.searchParams.has(name)) url.searchParams.set(name, '***');
  return url.toString();
}

/** The forms of the URL's secrets the redactor must know: the whole URL and each secret, as written and decoded. */
export function databaseUrlSecrets(text: string): string[] {
  const url = new URL(text);
  // searchParams are decoded already; the user-info password is as written.
  const asWritten = (name: string) => new RegExp(`[?&]${name}=([^&]*)`).exec(url.search)?.[1];
  const raw = [url.password, ...SECRET_PARAMETERS.map(asWritten)];
  const forms = new Set<string>([text, ...secretsOf(url)]);
  for (const secret of raw) {
    if (!secret) continue;
    forms.add(secret);
    try {
      forms.add(decodeURIComponent(secret));
    } catch {
      // a stray `%`: libpq takes the secret as written
    }
  }
  return [...forms];
}
