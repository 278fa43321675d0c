// The PostgreSQL URL of the host's configuration (host/config/databaseUrl.ts): checked, named in its errors by the
// field it came from, never quoted (it may hold a password), shown only without its password, and known to the
// redactor in every form before the store opens.
import { describe, expect, it } from 'vitest';
import { databaseUrlSecrets, parseDatabaseUrl, shownDatabaseUrl } from '../../../host/config/databaseUrl.js';
import { Redactor } from '../../../host/secrets/redactor.js';

const PASSWORD = 'pa55-w0rd%2Fslash';
const WITH_PASSWORD = `postgresql://paddock:${PASSWORD}@db.internal:5432/paddock?sslmode=require`;

describe('the database URL', () => {
  it('takes PostgreSQL URLs, TCP and Unix socket, and treats an empty value as unset', () => {
    for (const url of [
      'postgresql://paddock@db.internal:5432/paddock',
      'postgres://db.internal/paddock',
      'postgresql:///paddock?host=/tmp/pg-socket&user=postgres',
      WITH_PASSWORD,
    ])
      expect(parseDatabaseUrl(url, 'PADDOCK_DATABASE_URL')).toBe(url);
    expect(parseDatabaseUrl('', 'PADDOCK_DATABASE_URL')).toBeUndefined();
    expect(parseDatabaseUrl(undefined, 'PADDOCK_DATABASE_URL')).toBeUndefined();
  });

  it('refuses a malformed one as a config error naming the field, never quoting the value', () => {
    const cases: [string, RegExp][] = [
      [`mysql://paddock:${PASSWORD}@db/paddock`, /its scheme is mysql:/],
      [`paddock:${PASSWORD}@db/paddock`, /its scheme is paddock:|no scheme|does not parse/],
      [`db.internal:${PASSWORD}`, /scheme|parse/],
      [`postgresql://paddock:${PASSWORD}@db.internal:5432`, /names no database/],
      [`postgresql://paddock:${PASSWORD}@h1:5432,h2:5432/paddock`, /does not parse/],
    ];
    for (const [url, why] of cases) {
      let error: Error | undefined;
      try {
        parseDatabaseUrl(url, 'PADDOCK_DATABASE_URL');
      } catch (e) {
        error = e as Error;
      }
      expect(error, url).toMatchObject({ code: 'CONFIG_INVALID' });
      expect(error!.message).toMatch(/^PADDOCK_DATABASE_URL is not a PostgreSQL URL: /);
      expect(error!.message).toMatch(why);
      expect(error!.message).not.toContain(PASSWORD);
      expect(error!.message).not.toContain('pa55');
    }
  });

  it('refuses a password on the command line, where every user of the machine can read it', () => {
    expect(() => parseDatabaseUrl(WITH_PASSWORD, '--database-url', { noPassword: true })).toThrow(
      /--database-url holds a password.*PADDOCK_DATABASE_URL, PGPASSWORD or ~\/\.pgpass/,
    );
    const url = 'postgresql://paddock@db.internal/paddock';
    expect(parseDatabaseUrl(url, '--database-url', { noPassword: true })).toBe(url);
  });

  it('is shown without its password, and the redactor learns every form of it', () => {
    expect(shownDatabaseUrl(WITH_PASSWORD)).toBe('postgresql://paddock:***@db.internal:5432/paddock?sslmode=require');
    expect(shownDatabaseUrl('postgresql:///paddock?host=/tmp/s')).toBe('postgresql:///paddock?host=/tmp/s');
    const redactor = new Redactor();
    for (const secret of databaseUrlSecrets(WITH_PASSWORD)) redactor.add(secret);
    const said = `cannot reach ${WITH_PASSWORD}; password ${PASSWORD}; decoded ${decodeURIComponent(PASSWORD)}`;
    const redacted = redactor.text(said);
    expect(redacted).not.toContain('pa55-w0rd');
    expect(redacted).not.toContain('db.internal:5432/paddock?sslmode');
  });

  it('treats a password given as a query parameter (a socket URL has no user info) the same way', () => {
    const socket = `postgresql:///paddock?host=/tmp/pg-socket&user=paddock&password=${PASSWORD}`;
    expect(shownDatabaseUrl(socket)).toBe('postgresql:///paddock?host=%2Ftmp%2Fpg-socket&user=paddock&password=***');
    expect(() => parseDatabaseUrl(socket, '--database-url', { noPassword: true })).toThrow(/holds a password/);
    const redactor = new Redactor();
    for (const secret of databaseUrlSecrets(socket)) redactor.add(secret);
    expect(redactor.text(`it is ${PASSWORD} or ${decodeURIComponent(PASSWORD)}`)).not.toContain('pa55');
  });
});
