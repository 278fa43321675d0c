/**
 * What a tenant's own admin (any tenant but the operator's `default`, applying through `paddock serve`) may not
 * change: docs/security-model.md "HTTP API admin". Resources name host commands (an MCP server's `command`), host
 * paths (knowledge bases, artifacts, mounts, skills), URLs the host calls and secret references the host reads, so
 * only the operator creates or changes them (`paddock apply` on the host, or the `default` tenant's admin); a tenant's
 * admin manages its bindings, which cannot leave the host's isolation (`sandbox: process`, `allowDegrade`,
 * `readPaths`, `network.allowPrivate`). An object exactly as stored is always accepted, so an export applied back
 * round-trips.
 */
import { canonicalJson } from '../audit/canonicalJson.js';
import { CONFIG_KINDS, type ConfigKind, type ConfigRepo } from '../state/configRepo.js';
import type { ConfigProblem } from './validateConfig.js';
import type { Binding, ConfigFile, Resources } from './schema.js';

const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** Where the operator changes what a tenant's admin may not. */
const ASK_OPERATOR = 'ask the operator (`paddock apply` on the host, or an admin of the "default" tenant)';

/** Why a tenant's admin cannot create or change a resource. */
const RESOURCES_ARE_THE_OPERATORS =
  "a tenant's admin cannot create or change resources (they name host commands, paths, URLs and secrets)";

/** Binding fields that would take a run outside the host's isolation, each with why. */
const ISOLATION_FIELDS: { field: string; breaks: (b: Binding) => boolean; why: string }[] = [
  { field: 'sandbox', breaks: (b) => b.sandbox === 'process', why: 'runs the runner unsandboxed, as the host user' },
  { field: 'allowDegrade', breaks: (b) => b.allowDegrade, why: 'lets a run start with less isolation' },
  { field: 'readPaths', breaks: (b) => b.readPaths.length > 0, why: 'binds host paths into the sandbox' },
  {
    field: 'network.allowPrivate',
    breaks: (b) => b.network.allowPrivate,
    why: "reaches the host's loopback and private networks",
  },
];

/**
 * The problems of `raw` (the file as sent) applied by a tenant's own admin, each at its field path. `file` is the
 * validated configuration it became (defaults applied), `repo` the stored one.
 */
export function tenantAdminProblems(raw: unknown, file: ConfigFile, repo: ConfigRepo): ConfigProblem[] {
  if (!isRecord(raw)) return [];
  const problems: ConfigProblem[] = [];
  const unchanged = (kind: ConfigKind, id: string, spec: unknown) => {
    const stored = repo.get(kind, id);
    return stored !== undefined && canonicalJson(stored.spec) === canonicalJson(spec);
  };
  const resources = isRecord(raw.resources) ? raw.resources : {};
  for (const [plural, kind] of Object.entries(CONFIG_KINDS)) {
    const items = resources[plural];
    if (!Array.isArray(items)) continue;
    items.forEach((item: unknown, i) => {
      const id = isRecord(item) ? item.id : undefined;
      const spec = file.resources[plural as keyof Resources].find((r) => r.id === id);
      if (typeof id === 'string' && spec && unchanged(kind, id, spec)) return;
      problems.push({
        field: `resources.${plural}[${i}]`,
        message: `${RESOURCES_ARE_THE_OPERATORS}; ${ASK_OPERATOR}`,
      });
    });
  }
  const bindings = Array.isArray(raw.bindings) ? raw.bindings : [];
  bindings.forEach((item: unknown, i) => {
    const id = isRecord(item) ? item.id : undefined;
    const binding = file.bindings.find((b) => b.id === id);
    if (typeof id !== 'string' || !binding || unchanged('binding', id, binding)) return;
    for (const f of ISOLATION_FIELDS)
      if (f.breaks(binding))
        problems.push({
          field: `bindings[${i}].${f.field}`,
          message: `a tenant's admin cannot set this: it ${f.why}; ${ASK_OPERATOR}`,
        });
  });
  return problems;
}
