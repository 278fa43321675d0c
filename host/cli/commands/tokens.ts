import type { HostConfig } from '../../config/hostConfig.js';
import { HostError } from '../../errors.js';
import { API_ROLES, createApiToken, listApiTokens, revokeApiToken, type ApiRole } from '../../state/apiTokens.js';
import { openHostState } from '../../start.js';
import { expiryAfter, expiryInstant } from '../../util/expiry.js';

type Out = (text: string) => void;

/** `--expires`: `<n>m|h|d` from now (n: 1–99999), or an ISO 8601 date-time with its zone. */
export function parseExpiry(text: string, now = new Date()): Date {
  const at = expiryAfter(text, now) ?? expiryInstant(text);
  if (at) return at;
  throw new HostError(
    'INVALID_INPUT',
    `--expires: give a duration from now (30d, 12h, 90m) or an ISO date-time with its zone ` +
      `(got ${JSON.stringify(text)})`,
  );
}

/** `paddock tokens create|list|revoke`. Returns the exit code. */
export async function tokensCommand(
  config: HostConfig,
  verb: string,
  args: string[],
  flags: { json: boolean; tenant?: string; role?: string; name?: string; expires?: string; by?: string },
  out: Out,
  err: Out,
): Promise<number> {
  const by = `user:${flags.by ?? process.env.USER ?? 'operator'}`;
  // Checked before the store opens: a usage mistake changes nothing.
  if (verb === 'create') {
    const problems: string[] = [];
    if (!flags.tenant) problems.push('--tenant is required');
    if (!flags.role) problems.push(`--role is required (${API_ROLES.join(', ')})`);
    else if (!(API_ROLES as readonly string[]).includes(flags.role))
      problems.push(`--role must be one of ${API_ROLES.join(', ')} (got ${JSON.stringify(flags.role)})`);
    if (problems.length > 0) throw new HostError('INVALID_INPUT', problems.join('; '));
  }
  const expiresAt = verb === 'create' && flags.expires !== undefined ? parseExpiry(flags.expires) : undefined;
  const { store } = await openHostState(config);
  try {
    if (verb === 'create') {
      let created;
      try {
        created = createApiToken(store, {
          tenant: flags.tenant!,
          role: flags.role as ApiRole,
          name: flags.name,
          expiresAt,
          by,
        });
      } catch (error) {
        if (error instanceof RangeError) throw new HostError('INVALID_INPUT', error.message);
        throw error;
      }
      if (flags.json) out(JSON.stringify({ token: created.token, ...created.info }));
      else {
        out(created.token);
        err(
          `token ${created.info.id} for tenant ${created.info.tenant}, role ${created.info.role}` +
            `${created.info.expiresAt ? `, expires ${created.info.expiresAt}` : ', no expiry'}. ` +
            'It is shown this once; paddock keeps only its hash.',
        );
      }
      return 0;
    }
    if (verb === 'list') {
      const tokens = listApiTokens(store, { tenant: flags.tenant });
      if (flags.json) out(JSON.stringify(tokens));
      else if (tokens.length === 0) out('no tokens');
      else
        for (const t of tokens) {
          const state = t.revokedAt ? `revoked ${t.revokedAt}` : t.expiresAt ? `expires ${t.expiresAt}` : 'no expiry';
          out(`${t.id}  ${t.tenant.padEnd(16)} ${t.role.padEnd(9)} ${state.padEnd(33)} ${t.name}`);
        }
      return 0;
    }
    // revoke
    const id = args[0]!;
    const revoked = revokeApiToken(store, id, by);
    if (!revoked) throw new HostError('NOT_FOUND', `no token ${id}`);
    if (flags.json) out(JSON.stringify(revoked));
    else out(`token ${id} revoked (${revoked.revokedAt} by ${revoked.revokedBy})`);
    return 0;
  } finally {
    store.close();
  }
}
