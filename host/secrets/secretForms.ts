/**
 * Every written form of a secret the redactor looks for (docs/security-model.md, "Redaction"):
 * as is, JSON-escaped, URL-encoded, hex (lower and upper case), and base64 and base64url at each
 * of the three alignments the secret can have inside longer encoded data.
 *
 * Base64 encodes 3 bytes as 4 characters, so how `secret` looks depends on its byte offset mod 3
 * in the encoded data (`base64("KEY=" + secret)` puts it at offset 4 ≡ 1). For each offset r the
 * stable core is the run of characters whose 6 bits all come from the secret; the one or two
 * characters at each edge mix in neighbouring bytes and are left out, so the core is found
 * whatever surrounds the secret.
 */
export function secretForms(value: string): string[] {
  const bytes = Buffer.from(value);
  const forms = [
    value,
    JSON.stringify(value).slice(1, -1),
    encodeURIComponent(value),
    bytes.toString('hex'),
    bytes.toString('hex').toUpperCase(),
  ];
  const whole = bytes.toString('base64');
  forms.push(whole, whole.replace(/=+$/, ''), bytes.toString('base64url'));
  for (const r of [0, 1, 2]) {
    const core = base64Core(bytes, r);
    forms.push(core, core.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return [...new Set(forms)].filter((f) => f.length >= 8);
}

/** The characters of base64(r bytes + `bytes`) that depend on `bytes` alone. */
export function base64Core(bytes: Buffer, r: number): string {
  const encoded = Buffer.concat([Buffer.alloc(r), bytes]).toString('base64');
  // Character i carries bits [6i, 6i + 6); the secret's bits are [8r, 8(r + length)).
  return encoded.slice(Math.ceil((8 * r) / 6), Math.floor((8 * (r + bytes.length)) / 6));
}
