/** Keys whose string value is a secret by name (`apiKey`, `githubToken`, `client_secret`, …). */
export const SECRET_KEY = /(api[-_]?key|token|secret|password|passwd|private[-_]?key|authorization|credentials?)$/i;

/** Value shapes of well-known credentials. */
export const SECRET_SHAPES: { name: string; pattern: RegExp }[] = [
  { name: 'an OpenAI/Anthropic-style key (sk-…)', pattern: /\bsk-[A-Za-z0-9_-]{16,}/ },
  { name: 'a GitHub token', pattern: /\bgh[pousr]_[A-Za-z0-9]{20,}/ },
  { name: 'a Slack token', pattern: /\bxox[abposr]-[A-Za-z0-9-]{10,}/ },
  { name: 'an AWS access key id', pattern: /\bAKIA[0-9A-Z]{16}\b/ },
  { name: 'a Google API key', pattern: /\bAIza[0-9A-Za-z_-]{35}\b/ },
  { name: 'a private key', pattern: /-----BEGIN [A-Z ]*PRIVATE KEY-----/ },
  { name: 'a JSON Web Token', pattern: /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/ },
  { name: 'a bearer credential', pattern: /\bBearer\s+[A-Za-z0-9._~+/=-]{16,}/i },
  { name: 'a password in a URL', pattern: /^[a-z][a-z0-9+.-]*:\/\/[^/\s:@]+:[^/\s@]+@/i },
];

/** Where an apparent inline secret sits in a configuration, and why it looks like one. */
export interface InlineSecret {
  field: string;
  why: string;
}

/**
 * Find the first string in `value` that looks like a secret: under a secret-named key, or shaped
 * like a known credential. Secrets belong in `{env: NAME}` or `{file: path}` references.
 */
export function findInlineSecret(value: unknown, field = ''): InlineSecret | undefined {
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = findInlineSecret(item, `${field}[${i}]`);
      if (found) return found;
    }
    return undefined;
  }
  if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      const path = field ? `${field}.${key}` : key;
      if (typeof item === 'string' && item.length > 0 && SECRET_KEY.test(key)) {
        return { field: path, why: `"${key}" holds a literal string; write { env: NAME } or { file: /path } instead` };
      }
      const found = findInlineSecret(item, path);
      if (found) return found;
    }
    return undefined;
  }
  if (typeof value === 'string') {
    const shape = SECRET_SHAPES.find((s) => s.pattern.test(value));
    if (shape)
      return {
        field,
        why: `the value looks like ${shape.name}; reference it with { env: NAME } or { file: /path } instead`,
      };
  }
  return undefined;
}

/** Every apparent inline secret in `value` (see {@link findInlineSecret}), in document order. */
export function findInlineSecrets(value: unknown, field = ''): InlineSecret[] {
  if (Array.isArray(value)) return value.flatMap((item, i) => findInlineSecrets(item, `${field}[${i}]`));
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).flatMap(([key, item]) => {
      const path = field ? `${field}.${key}` : key;
      if (typeof item === 'string' && item.length > 0 && SECRET_KEY.test(key))
        return [
          { field: path, why: `"${key}" holds a literal string; write { env: NAME } or { file: /path } instead` },
        ];
      return findInlineSecrets(item, path);
    });
  }
  const found = findInlineSecret(value, field);
  return found ? [found] : [];
}

/** The first string in `value` for which `test` is true, with its field path. */
export function findString(value: unknown, test: (text: string) => boolean, field = ''): string | undefined {
  if (typeof value === 'string') return test(value) ? field || '(root)' : undefined;
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = findString(item, test, `${field}[${i}]`);
      if (found) return found;
    }
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      const found = findString(item, test, field ? `${field}.${key}` : key);
      if (found) return found;
    }
  }
  return undefined;
}
