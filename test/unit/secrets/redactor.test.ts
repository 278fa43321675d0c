import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { REDACT_MAX_DEPTH, REDACTED, Redactor, TOO_DEEP } from '../../../host/secrets/redactor.js';
import { base64Core } from '../../../host/secrets/secretForms.js';
import { CREDENTIAL_ENV_NAME, registerEnvSecrets } from '../../../host/secrets/hostSecrets.js';

/** Push `text` through a fresh streaming redactor in chunks of the given sizes; what came out. */
function streamInChunks(r: Redactor, text: string, cuts: number[]): string {
  const stream = r.stream();
  let out = '';
  let i = 0;
  for (const n of cuts) {
    out += stream.push(text.slice(i, i + n));
    i += n;
  }
  return out + stream.push(text.slice(i)) + stream.end();
}

describe('redactor', () => {
  it('removes a registered secret in every written form, and generic credential shapes', () => {
    const r = new Redactor();
    r.add('s3cr3t"value\\x');
    r.add('short'); // too short to register
    const b64 = Buffer.from('s3cr3t"value\\x').toString('base64');
    expect(r.text('a s3cr3t"value\\x b')).toBe(`a ${REDACTED} b`);
    expect(r.text(JSON.stringify({ k: 's3cr3t"value\\x' }))).toBe(`{"k":"${REDACTED}"}`);
    expect(r.text(`basic ${b64}`)).toBe(`basic ${REDACTED}`);
    expect(r.text('short stays')).toBe('short stays');
    expect(r.text('key sk-ant-api03-abcdefghijklmnopqrstuv and ghp_abcdefghijklmnopqrstuvwxyz0123')).toBe(
      `key ${REDACTED} and ${REDACTED}`,
    );
    expect(r.value({ a: ['s3cr3t"value\\x', 1], b: null })).toEqual({ a: [REDACTED, 1], b: null });
  });

  it('catches a secret split across stream chunks at any cut (property)', () => {
    const secret = 'canary-7f3e9a1b2c4d';
    const r = new Redactor();
    r.add(secret);
    fc.assert(
      fc.property(
        fc.string({ maxLength: 300 }),
        fc.string({ maxLength: 300 }),
        fc.array(fc.integer({ min: 1, max: 50 }), { maxLength: 30 }),
        (before, after, cuts) => {
          const text = `${before}${secret}${after}`;
          const out = streamInChunks(r, text, cuts);
          expect(out).not.toContain(secret);
          expect(out).toContain(REDACTED);
        },
      ),
      { numRuns: 300 },
    );
  });
});

const SECRET = 'canary-7f3e9a1b2c4d';
/** Every way the tests write a secret into encoded data: as is, base64/base64url (padded or not), hex. */
const ENCODINGS: Record<string, (b: Buffer) => string> = {
  plain: (b) => b.toString('latin1'),
  base64: (b) => b.toString('base64'),
  base64NoPad: (b) => b.toString('base64').replace(/=+$/, ''),
  base64url: (b) => b.toString('base64url'),
  hex: (b) => b.toString('hex'),
  HEX: (b) => b.toString('hex').toUpperCase(),
};
/** The secret's tell-tale substrings in an output: the raw value and its encodings on their own. */
function leaks(out: string, secret = SECRET): string[] {
  const s = Buffer.from(secret);
  const needles = [
    secret,
    s.toString('hex'),
    s.toString('hex').toUpperCase(),
    ...[0, 1, 2].flatMap((r) => [base64Core(s, r), base64Core(s, r).replace(/\+/g, '-').replace(/\//g, '_')]),
  ];
  return needles.filter((n) => out.includes(n));
}

describe('encoded secrets', () => {
  it('finds base64 and base64url at every alignment, and hex in both cases, whatever surrounds them', () => {
    const r = new Redactor();
    r.add(SECRET);
    for (const prefix of ['', 'K', 'KE', 'KEY=', 'AWS_SECRET=', '\u00e9\u00e8']) {
      for (const [name, encode] of Object.entries(ENCODINGS)) {
        const encoded = encode(Buffer.concat([Buffer.from(prefix), Buffer.from(SECRET), Buffer.from('; next=1')]));
        const out = r.text(`data: ${encoded} end`);
        expect(leaks(out), `${name} after ${JSON.stringify(prefix)}: ${out}`).toEqual([]);
        expect(out, name).toContain(REDACTED);
      }
    }
    // base64("KEY=" + secret) is the case the issue reproduced.
    expect(r.text(Buffer.from(`KEY=${SECRET}`).toString('base64'))).toContain(REDACTED);
    // Ordinary text and other data stay as they are.
    expect(r.text('nothing secret here, 0123456789abcdef')).toBe('nothing secret here, 0123456789abcdef');
    expect(r.text(Buffer.from('canary-other-value-xyz').toString('base64'))).toBe(
      Buffer.from('canary-other-value-xyz').toString('base64'),
    );
  });

  it(
    'property: random bytes around the secret, a random encoding, random chunk cuts → the secret in no output ' +
      'form, streamed or not',
    () => {
      const r = new Redactor();
      r.add(SECRET);
      const encodings = Object.values(ENCODINGS);
      fc.assert(
        fc.property(
          fc.uint8Array({ maxLength: 64 }),
          fc.uint8Array({ maxLength: 64 }),
          fc.integer({ min: 0, max: encodings.length - 1 }),
          fc.array(fc.integer({ min: 1, max: 40 }), { maxLength: 40 }),
          (before, after, which, cuts) => {
            const text = `x ${encodings[which]!(Buffer.concat([before, Buffer.from(SECRET), after]))} y`;
            expect(leaks(r.text(text))).toEqual([]);
            const out = streamInChunks(r, text, cuts);
            expect(leaks(out)).toEqual([]);
          },
        ),
        { numRuns: 500 },
      );
    },
  );

  it('holds back enough of a stream for the longest form (hex of a long secret)', () => {
    const long = `long-secret-${'q'.repeat(150)}`; // hex form: 324 characters, longer than the default holdback
    const r = new Redactor();
    r.add(long);
    expect(r.holdback).toBe(Buffer.from(long).toString('hex').length - 1);
    const text = `head ${Buffer.from(long).toString('hex')} tail`;
    for (const size of [1, 7, 100, 323]) {
      const stream = r.stream();
      let out = '';
      for (let i = 0; i < text.length; i += size) out += stream.push(text.slice(i, i + size));
      out += stream.end();
      expect(out).toBe(`head ${REDACTED} tail`);
    }
  });

  it('an open-ended credential shape split across chunks is redacted whole, not just the part one window saw', () => {
    const key = `sk-${'A1b2C3d4'.repeat(30)}`; // 243 characters: longer than the holdback
    const stream = new Redactor().stream();
    let out = '';
    for (let i = 0; i < key.length + 10; i += 50)
      out += stream.push(`${i === 0 ? 'key ' : ''}${(key + ' done.....').slice(i, i + 50)}`);
    out += stream.end();
    expect(out).toBe(`key ${REDACTED} done.....`);
  });
});

describe('the value walk', () => {
  it('redacts object keys as well as values, keeps key order, and never creates a prototype from "__proto__"', () => {
    const r = new Redactor();
    r.add(SECRET);
    const input = JSON.parse(
      `{"z": 1, "${SECRET}": "a", "__proto__": "${SECRET}", "a": [{"k": "` +
        `${Buffer.from(`KEY=${SECRET}`).toString('base64')}"}]}`,
    );
    const out = r.value(input) as Record<string, unknown>;
    expect(Object.keys(out)).toEqual(['z', REDACTED, '__proto__', 'a']);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(JSON.stringify(out)).not.toContain(SECRET);
    expect(JSON.stringify(out)).toContain(REDACTED);
    expect(JSON.stringify(input)).toContain(SECRET); // the input is not changed
  });

  it('tells (once) whether it replaced anything: in a value, in a key, or a container too deep to walk', () => {
    const r = new Redactor();
    r.add(SECRET);
    const heard = (input: unknown) => {
      let count = 0;
      r.value(input, () => (count += 1));
      return count;
    };
    expect(heard({ a: ['plain', 1, null, { b: 'text' }] })).toBe(0);
    expect(heard({ a: [`x ${SECRET}`, `y ${SECRET}`] })).toBe(1);
    expect(heard({ [SECRET]: 1 })).toBe(1);
    let deep: unknown = 'plain';
    for (let i = 0; i < 300; i++) deep = [deep];
    expect(heard(deep)).toBe(1);
  });

  it('100k-level nesting does not throw; containers past the depth bound become a marker, in linear time', () => {
    const r = new Redactor();
    r.add(SECRET);
    for (const make of [(v: unknown) => [v], (v: unknown) => ({ k: v })]) {
      let deep: unknown = SECRET;
      for (let i = 0; i < 100_000; i++) deep = make(deep);
      const started = Date.now();
      const out = r.value(deep);
      expect(Date.now() - started).toBeLessThan(2_000);
      const text = JSON.stringify(out); // the result itself is shallow enough to serialize
      expect(text).not.toContain(SECRET);
      expect(text).toContain(TOO_DEEP);
      let depth = 0;
      for (
        let v: unknown = out;
        v !== null && typeof v === 'object';
        v = Array.isArray(v) ? v[0] : (v as { k: unknown }).k
      )
        depth++;
      expect(depth).toBe(REDACT_MAX_DEPTH);
    }
    // At the bound exactly, nothing is cut.
    let ok: unknown = SECRET;
    for (let i = 0; i < REDACT_MAX_DEPTH; i++) ok = [ok];
    expect(JSON.stringify(r.value(ok))).toBe(
      `${'['.repeat(REDACT_MAX_DEPTH)}"${REDACTED}"${']'.repeat(REDACT_MAX_DEPTH)}`,
    );
  });

  it(
    'a wide value costs linear time (a quadratic walk would take hours here; the bound allows for a loaded ' +
      'machine)',
    () => {
      const r = new Redactor();
      r.add(SECRET);
      const wide = Array.from({ length: 200_000 }, (_, i) => ({ k: i % 1000 === 0 ? SECRET : `v${i}` }));
      const started = Date.now();
      const out = r.value(wide);
      expect(Date.now() - started).toBeLessThan(20_000);
      expect(JSON.stringify(out)).not.toContain(SECRET);
    },
  );
});

describe('credential-named environment variables', () => {
  const credentials = [
    'AWS_SECRET_ACCESS_KEY',
    'MY_OPENAI_KEY',
    'ANTHROPIC_API_KEY',
    'DB_PASSWORD',
    'SMTP_PASS',
    'GITHUB_TOKEN',
    'AWS_SESSION_TOKEN',
    'CLIENT_SECRET',
    'SECRET_KEY_BASE',
    'GPG_PASSPHRASE',
    'KEY',
    'api_key',
    'STRIPE.APIKEY',
    'GOOGLE_APPLICATION_CREDENTIALS',
    'PASSWORD_HASH_PEPPER',
  ];
  const notCredentials = [
    'PATH',
    'HOME',
    'PWD',
    'OLDPWD',
    'KEYBOARD_LAYOUT',
    'TOKENIZERS_PARALLELISM',
    'PASSWORD_STORE_DIR',
    'SECRET_FILE',
    'TOKEN_URL',
    'SSH_AUTH_SOCK',
    'KEY_LENGTH',
    'MONKEY',
    'HOTKEY',
    'BYPASS',
    'LANG',
    'NODE_OPTIONS',
  ];
  it.each(credentials)('%s is a credential', (name) => expect(CREDENTIAL_ENV_NAME.test(name)).toBe(true));
  it.each(notCredentials)('%s is not', (name) => expect(CREDENTIAL_ENV_NAME.test(name)).toBe(false));

  it('registerEnvSecrets registers exactly the credential-named values', () => {
    const env = Object.fromEntries(
      [...credentials, ...notCredentials].map((name, i) => [name, `value-of-${i}-${name}`]),
    );
    const r = new Redactor();
    registerEnvSecrets(r, env);
    for (const [name, value] of Object.entries(env))
      expect(r.text(value), name).toBe(credentials.includes(name) ? REDACTED : value);
  });
});

describe('detection without redaction', () => {
  it('containsIgnoringCase finds a known form in any case (a host name), and shapes as before', () => {
    const r = new Redactor();
    r.add('sk-live-lowercase-canary-0123');
    expect(r.containsIgnoringCase('SK-LIVE-LOWERCASE-CANARY-0123.example.com')).toBe(true);
    expect(r.containsIgnoringCase('sk-live-lowercase-canary-0123')).toBe(true);
    expect(r.containsIgnoringCase('api.example.com')).toBe(false);
    expect(r.containsIgnoringCase('AKIAIOSFODNN7EXAMPLE.example.com')).toBe(true); // an AWS key's shape
  });

  it('watchKnown finds a known form split across chunks, never a mere shape (random bytes may look like one)', () => {
    const r = new Redactor();
    r.add(SECRET);
    const seen = r.watchKnown();
    expect(seen(`prefix ${SECRET.slice(0, 5)}`)).toBe(false);
    expect(seen(`${SECRET.slice(5)} suffix`)).toBe(true);
    const shapes = r.watchKnown();
    expect(shapes('Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123456789 https://u:p@h/')).toBe(false);
    expect(new Redactor().watchKnown()('anything at all')).toBe(false);
  });
});

describe('held values (what a run learnt from a secret file)', () => {
  it('stay known until the last holder releases them; a configured secret is never forgotten with them', () => {
    const r = new Redactor();
    const held = 'hunter2-db-password-9f8e7d';
    const releaseA = r.hold(held);
    const releaseB = r.hold(held);
    releaseA();
    releaseA(); // twice is once
    expect(r.text(`x ${held}`)).toBe(`x ${REDACTED}`);
    expect(r.text(Buffer.from(held).toString('base64'))).toContain(REDACTED);
    releaseB();
    expect(r.text(`x ${held}`)).toBe(`x ${held}`);
    const configured = 'configured-secret-value-1234';
    r.add(configured);
    r.hold(configured)();
    expect(r.text(configured)).toBe(REDACTED);
    expect(r.hold('short')).toBeTypeOf('function');
  });

  it('keep a value registered while somebody held it after the holder lets go (outside attack)', () => {
    const r = new Redactor();
    const value = 'upstream-credential-1234';
    const release = r.hold(value); // run A read it from a secret file
    r.add(value); // an MCP upstream of run B registers the same header value
    release(); // run A ends
    expect(r.text(`token=${value}`)).toBe(`token=${REDACTED}`);
    r.forget(value);
    expect(r.text(value)).toBe(value);
  });

  it("hold a value that is a form of another as a value of its own, past the other's release (outside attack)", () => {
    const r = new Redactor();
    const secret = 'hunter2-db-password-9f8e7d';
    const encoded = Buffer.from(secret).toString('base64');
    const releaseSecret = r.hold(secret);
    const releaseEncoded = r.hold(encoded);
    const twice = Buffer.from(encoded).toString('base64');
    expect(r.text(twice)).toBe(REDACTED); // its own forms are known
    releaseSecret();
    expect(r.text(encoded)).toBe(REDACTED);
    expect(r.text(secret)).toBe(secret);
    releaseEncoded();
    expect(r.text(encoded)).toBe(encoded);
  });

  it('forget a held value only when its last holder lets go', () => {
    const r = new Redactor();
    const value = 'run-token-held-elsewhere-42';
    r.add(value);
    const release = r.hold(value);
    r.forget(value);
    expect(r.text(value)).toBe(REDACTED);
    release();
    expect(r.text(value)).toBe(value);
  });
});
