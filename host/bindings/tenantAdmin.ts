/**
 * What an admin applying through `paddock serve` may not change (every tenant's, the operator's `default` too unless
 * the server was started with `--api-host-config`): docs/security-model.md "HTTP API admin". Resources name host
 * commands (an MCP server's `command`), host paths (knowledge bases, artifacts, mounts, skills), URLs the host calls
 * and secret references the host reads, so only the operator creates or changes them (`paddock apply` on the host);
 * an API admin manages its tenant's bindings, which cannot leave the host's isolation (`sandbox: process`,
 * `allowDegrade`, `readPaths`, `network.allowPrivate`). An object exactly as stored is always accepted, so an export
 * applied back round-trips, and so is a stored binding disabled.
 */
import { canonicalJson } from '../audit/canonicalJson.js';
import { CONFIG_KINDS, type ConfigKind, type ConfigRepo } from '../state/configRepo.js';
import type { ConfigProblem } from './validateConfig.js';
import { BindingSchema, ConfigFileSchema, type Resources } from './schema.js';

const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** Where the operator changes what a tenant's admin may not. */
const ASK_OPERATOR =
  'ask the operator (`paddock apply` on the host, or an admin of the "default" tenant on a server started with ' +
  '--api-host-config)';

/** Why an API admin cannot create or change a resource. */
const RESOURCES_ARE_THE_OPERATORS =
  'an admin through the API cannot create or change resources (they name host commands, paths, URLs and secrets)';

/** The sandbox a binding gets when it names none: the host's full isolation. */
const DEFAULT_SANDBOX: unknown = BindingSchema.shape.sandbox.parse(undefined);

/**
 * Binding fields that would take a run outside the host's isolation, each with why. Checked on the object as sent (a
 * field left out takes its default, which is always inside the isolation); any value but the default is refused, so a
 * value of the wrong type cannot slip past as "not process".
 */
const ISOLATION_FIELDS: { field: string; breaks: (b: Record<string, unknown>) => boolean; why: string }[] = [
  {
    field: 'sandbox',
    breaks: (b) => 'sandbox' in b && b.sandbox !== DEFAULT_SANDBOX,
    why: 'runs the runner with less isolation than the default sandbox',
  },
  {
    field: 'allowDegrade',
    breaks: (b) => 'allowDegrade' in b && b.allowDegrade !== false,
    why: 'lets a run start with less isolation',
  },
  {
    field: 'readPaths',
    breaks: (b) => 'readPaths' in b && !(Array.isArray(b.readPaths) && b.readPaths.length === 0),
    why: 'binds host paths into the sandbox',
  },
  {
    field: 'network.allowPrivate',
    breaks: (b) => isRecord(b.network) && 'allowPrivate' in b.network && b.network.allowPrivate !== false,
    why: "reaches the host's loopback and private networks",
  },
];

/**
 * The problems of `own` (the file as sent, its objects stamped with the tenant) applied by a tenant's own admin, each
 * at its field path; found before validation, so they are listed with the validator's. An object is "as stored" when
 * it parses to exactly the stored spec.
 */
export function tenantAdminProblems(own: unknown, repo: ConfigRepo): ConfigProblem[] {
  if (!isRecord(own)) return [];
  const problems: ConfigProblem[] = [];
  const asStored = (kind: ConfigKind, plural: string | undefined, item: unknown) => {
    const id = isRecord(item) ? item.id : undefined;
    const stored = typeof id === 'string' ? repo.get(kind, id) : undefined;
    if (!stored) return false;
    const parsed = plural
      ? ConfigFileSchema.safeParse({ resources: { [plural]: [item] } })
      : ConfigFileSchema.safeParse({ bindings: [item] });
    if (!parsed.success) return false;
    const spec = plural ? parsed.data.resources[plural as keyof Resources][0] : parsed.data.bindings[0];
    if (canonicalJson(stored.spec) === canonicalJson(spec)) return true;
    // A binding as stored but disabled: stopping what the operator made widens nothing (`bindings/:id/disable`).
    return (
      !plural &&
      (spec as { enabled?: unknown }).enabled === false &&
      canonicalJson({ ...(stored.spec as object), enabled: false }) === canonicalJson(spec)
    );
  };
  const resources = isRecord(own.resources) ? own.resources : {};
  for (const [plural, kind] of Object.entries(CONFIG_KINDS)) {
    const items = resources[plural];
    if (!Array.isArray(items)) continue;
    items.forEach((item: unknown, i) => {
      if (!asStored(kind, plural, item))
        problems.push({
          field: `resources.${plural}[${i}]`,
          message: `${RESOURCES_ARE_THE_OPERATORS}; ${ASK_OPERATOR}`,
        });
    });
  }
  const bindings = Array.isArray(own.bindings) ? own.bindings : [];
  bindings.forEach((item: unknown, i) => {
    if (!isRecord(item) || asStored('binding', undefined, item)) return;
    for (const f of ISOLATION_FIELDS)
      if (f.breaks(item))
        problems.push({
          field: `bindings[${i}].${f.field}`,
          message: `an admin through the API cannot set this: it ${f.why}; ${ASK_OPERATOR}`,
        });
  });
  return problems;
}
