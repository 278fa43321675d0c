import { canonicalJson } from '../audit/canonicalJson.js';
import type { Store } from '../state/store.js';
import { clearSkillChange, forgetSkillDigest, recordedSkillDigests, recordSkillDigest } from '../state/skillDigests.js';
import { CONFIG_KINDS, ConfigRepo, type ConfigChange, type ConfigKind } from './configRepo.js';
import type { ConfigFile, Resources, SkillResource } from './schema.js';
import { readSkill } from './skillDigest.js';
import { configInvalid, validateConfig, type ConfigProblem, type ValidationContext } from './validateConfig.js';
import { grantWarnings, type GrantWarning } from './grantWarnings.js';
import { describeMissingRef, missingSecretRefs } from '../secrets/hostSecrets.js';
import { HostError } from '../errors.js';
import { DEFAULT_TENANT } from '../config/tenant.js';
import { configOfTenant, foreignProblems, objectOfTenant, stampTenant, takenProblem } from './tenantScope.js';
import { tenantAdminProblems } from './tenantAdmin.js';

/** One object `apply` created, updated, deleted or left alone. */
export interface AppliedChange {
  kind: ConfigKind;
  id: string;
  action: ConfigChange;
}

/** How many bindings an API admin may keep in its tenant (the operator's `paddock apply` is not bound). */
export const MAX_TENANT_BINDINGS = 1000;
/**
 * How large a tenant's bindings may be in all, as stored (canonical JSON, UTF-8), after an apply through the API: each
 * dispatch of the tenant reads them, and 1 000 bindings of 1 MiB each slowed every later read of the server.
 */
export const MAX_TENANT_BINDING_BYTES = 4 * 1024 * 1024;
/**
 * How many bytes of configuration a tenant's API admins may write in one UTC day (each created or updated object's
 * spec, and {@link CHANGE_ROW_BYTES} per change of any kind). Every change is kept for good in the append-only
 * history, so without a budget one admin re-applying large bindings grew the database by megabytes a second.
 */
export const MAX_TENANT_CONFIG_BYTES_PER_DAY = 64 * 1024 * 1024;
/** What one change row costs beyond its spec (ids, times, actor), counted against the daily budget. */
export const CHANGE_ROW_BYTES = 256;

/** Options of {@link applyConfig}. */
export interface ApplyOptions {
  /** Delete stored objects the file does not list. */
  prune?: boolean;
  /** Validate and report, change nothing. */
  dryRun?: boolean;
  /** Who applies (audit actor), e.g. `user:alice`. */
  by: string;
  /**
   * Apply on behalf of this tenant only (`paddock serve`): the file's objects without `tenant` get it, one naming
   * another tenant or taking an id another tenant's object holds is a problem, the stored objects kept, validated
   * against and pruned are this tenant's only. Unset: the whole store (the operator's `paddock apply`).
   */
  tenant?: string;
  /**
   * With `tenant` `default`: the applier may also create and change resources and binding fields that leave the
   * isolation, as the operator's `paddock apply` does (`paddock serve --api-host-config`). Ignored for other tenants.
   */
  hostLevel?: boolean;
}

type Raw = { resources?: Record<string, unknown[]>; bindings?: unknown[] };

/**
 * Apply a configuration declaratively. Without `prune`, stored objects the file does not mention
 * stay and take part in validation (the file is checked as merged into them). Everything is
 * validated before anything changes; the changes commit in one transaction. `warnings` lists the
 * grants a binding's runner will not get (resolveRunAccess' `withheld`).
 */
export function applyConfig(
  store: Store,
  raw: unknown,
  context: ValidationContext,
  options: ApplyOptions,
): { file: ConfigFile; changes: AppliedChange[]; warnings: GrantWarning[]; missingSecrets: string[] } {
  const repo = new ConfigRepo(store);
  const scope = options.tenant;
  // A tenant's apply reads its own objects only (an index range): other tenants' many objects cost it nothing.
  const current = scope === undefined ? repo.snapshot() : configOfTenant(repo.snapshotOfTenant(scope), scope);
  const own = scope === undefined ? raw : stampTenant(raw, scope);
  // An API admin changes only its tenant's bindings, within the host's isolation: resources name host commands,
  // paths, URLs and secrets, so they stay as the operator made them (kept even by a prune). Only the operator's own
  // tenant, on a server that allows it, may do what `paddock apply` on the host does.
  const restricted = scope !== undefined && !(scope === DEFAULT_TENANT && options.hostLevel === true);
  const foreign =
    scope === undefined
      ? []
      : [...foreignProblems(raw, scope, repo), ...(restricted ? tenantAdminProblems(own, repo) : [])];
  const kept = restricted ? { ...current, bindings: [] } : current;
  const merged = options.prune && !restricted ? own : options.prune ? mergeKept(own, kept) : mergeKept(own, current);
  // Each of a tenant's dispatches reads its bindings, on the event loop every tenant shares: an API admin keeps them
  // to a bound, checked before the validator reads them all.
  const bindingCount = Array.isArray((merged as Raw | null)?.bindings) ? (merged as Raw).bindings!.length : 0;
  if (restricted && bindingCount > MAX_TENANT_BINDINGS)
    throw configInvalid([
      {
        field: 'bindings',
        message:
          `a tenant's admin may keep at most ${MAX_TENANT_BINDINGS} bindings; this would leave ${bindingCount} ` +
          '(the operator can apply more with `paddock apply` on the host)',
      },
    ]);
  const file = validateWith(foreign, () => validateConfig(merged, context));
  if (scope !== undefined) boundBindingBytes(file);

  const wanted: { kind: ConfigKind; id: string; spec: unknown }[] = [
    ...Object.entries(CONFIG_KINDS).flatMap(([plural, kind]) =>
      file.resources[plural as keyof Resources].map((spec) => ({ kind: kind as ConfigKind, id: spec.id, spec })),
    ),
    ...file.bindings.map((spec) => ({ kind: 'binding' as const, id: spec.id, spec })),
  ];
  const wantedKeys = new Set(wanted.map((w) => `${w.kind}/${w.id}`));
  const doomed = (scope === undefined ? repo.list() : repo.listAllOfTenant(scope))
    .filter((o) => (scope === undefined || objectOfTenant(o, scope)) && !wantedKeys.has(`${o.kind}/${o.id}`))
    .filter((o) => !restricted || o.kind === 'binding');

  const run = () => {
    const changes: AppliedChange[] = [];
    for (const w of wanted) {
      // Checked again inside the transaction: another process may have taken the id since foreignProblems looked.
      const held = scope === undefined ? undefined : repo.get(w.kind, w.id);
      if (held && !objectOfTenant(held, scope!)) throw configInvalid([takenProblem(`${w.kind} ${w.id}`, w.kind, w.id)]);
      if (options.dryRun) {
        const existing = repo.get(w.kind, w.id);
        changes.push({
          kind: w.kind,
          id: w.id,
          action: !existing
            ? 'created'
            : canonicalJson(existing.spec) === canonicalJson(w.spec)
              ? 'unchanged'
              : 'updated',
        });
      } else changes.push({ kind: w.kind, id: w.id, action: repo.put(w.kind, w.id, w.spec, options.by) });
    }
    if (!options.dryRun && scope !== undefined) countWrites(repo, scope, wanted, changes, doomed.length);
    if (!options.dryRun) recordSkillDigests(store, file.resources.skills, mentionedIds(raw, 'skills'), options.by);
    // Bindings go first so no stored binding is ever left pointing at a deleted resource.
    for (const o of [...doomed].sort((a, b) => Number(b.kind === 'binding') - Number(a.kind === 'binding'))) {
      if (!options.dryRun) {
        repo.delete(o.kind, o.id, options.by);
        if (o.kind === 'skill') forgetSkillDigest(store, o.id);
      }
      changes.push({ kind: o.kind, id: o.id, action: 'deleted' });
    }
    return changes;
  };
  // Accepted, but some grants will never reach their runner: said, not refused.
  const warnings = grantWarnings(file, context.catalog);
  // Secret references are read at use time, possibly by a host with another environment: a
  // missing one is a warning naming each resource and field, not a refusal.
  const missingSecrets = missingSecretRefs(file.resources).map(describeMissingRef);
  return { file, changes: options.dryRun ? run() : store.transaction(run), warnings, missingSecrets };
}

/** Refuses (at `bindings`) a tenant's API apply that would leave its bindings larger than the bound in all. */
function boundBindingBytes(file: ConfigFile): void {
  const bytes = file.bindings.reduce((sum, b) => sum + Buffer.byteLength(canonicalJson(b)), 0);
  if (bytes > MAX_TENANT_BINDING_BYTES)
    throw configInvalid([
      {
        field: 'bindings',
        message:
          `a tenant's bindings may take at most ${MAX_TENANT_BINDING_BYTES} bytes in all as stored; this would leave ` +
          `${bytes} (the operator can apply more with \`paddock apply\` on the host)`,
      },
    ]);
}

/**
 * Count what this apply writes against the tenant's daily budget, inside its transaction: over the budget, it throws
 * QUOTA_EXCEEDED and the whole apply rolls back.
 */
function countWrites(
  repo: ConfigRepo,
  tenant: string,
  wanted: readonly { kind: ConfigKind; id: string; spec: unknown }[],
  changes: readonly AppliedChange[],
  deletions: number,
): void {
  let bytes = deletions * CHANGE_ROW_BYTES;
  changes.forEach((change, i) => {
    if (change.action === 'created' || change.action === 'updated')
      bytes += CHANGE_ROW_BYTES + Buffer.byteLength(canonicalJson(wanted[i]!.spec));
  });
  if (bytes === 0) return;
  const now = new Date();
  const day = now.toISOString().slice(0, 10);
  const before = repo.writtenOn(tenant, day);
  if (before + bytes > MAX_TENANT_CONFIG_BYTES_PER_DAY) {
    const nextDay = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
    throw new HostError(
      'QUOTA_EXCEEDED',
      `tenant "${tenant}" may write at most ${MAX_TENANT_CONFIG_BYTES_PER_DAY} bytes of configuration a day ` +
        `through the API; ${before} written today (UTC), this apply would write ${bytes}`,
      { reason: 'config_write_quota', retryAfterSeconds: Math.ceil((nextDay - now.getTime()) / 1000) },
    );
  }
  repo.countWritten(tenant, day, bytes);
}

/** Validate, reporting `foreign` (tenant problems found before) together with the validator's, all at once. */
function validateWith(foreign: readonly ConfigProblem[], validate: () => ConfigFile): ConfigFile {
  let file: ConfigFile;
  try {
    file = validate();
  } catch (error) {
    if (foreign.length === 0 || !(error instanceof HostError) || error.code !== 'CONFIG_INVALID') throw error;
    const found = (error.data.problems as ConfigProblem[] | undefined) ?? [
      { field: String(error.data.field ?? '(root)'), message: error.message },
    ];
    throw configInvalid([...foreign, ...found]);
  }
  if (foreign.length > 0) throw configInvalid(foreign);
  return file;
}

/** The file's objects first (so error paths match the file), then stored objects it does not mention. */
function mergeKept(raw: unknown, current: ConfigFile): unknown {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return raw;
  const file = raw as Raw;
  const idsOf = (items: unknown[] | undefined) => new Set((items ?? []).map((i) => (i as { id?: unknown })?.id));
  const resources: Record<string, unknown> = { ...(file.resources ?? {}) };
  if (file.resources !== undefined && (typeof file.resources !== 'object' || Array.isArray(file.resources))) return raw;
  for (const plural of Object.keys(CONFIG_KINDS) as (keyof Resources)[]) {
    const own = file.resources?.[plural];
    if (own !== undefined && !Array.isArray(own)) return raw;
    const ids = idsOf(own);
    const kept = current.resources[plural].filter((r) => !ids.has(r.id));
    if (own !== undefined || kept.length > 0) resources[plural] = [...(own ?? []), ...kept];
  }
  if (file.bindings !== undefined && !Array.isArray(file.bindings)) return raw;
  const bindingIds = idsOf(file.bindings);
  return {
    ...file,
    resources,
    bindings: [...(file.bindings ?? []), ...current.bindings.filter((b) => !bindingIds.has(b.id))],
  };
}

/** Ids of one resource kind the applied file itself lists. */
function mentionedIds(raw: unknown, plural: keyof Resources): Set<string> {
  const items = (raw as Raw | null)?.resources?.[plural];
  return new Set(Array.isArray(items) ? items.map((i) => String((i as { id?: unknown })?.id)) : []);
}

/**
 * Record the content digest of each skill the file lists (applying it accepts its content as it
 * is now) and of any kept skill never recorded. Runs compare against this (docs/gateway.md, "Skills").
 */
function recordSkillDigests(store: Store, skills: SkillResource[], mentioned: Set<string>, by: string): void {
  const recorded = recordedSkillDigests(store);
  for (const skill of skills) {
    if (!mentioned.has(skill.id) && recorded.has(skill.id)) continue;
    const identity = readSkill(skill.path, skill.name);
    if (recorded.get(skill.id) === identity.digest) {
      // Listed again with the content it was recorded with: a change runs found since no longer stands.
      if (mentioned.has(skill.id)) clearSkillChange(store, skill.id);
      continue;
    }
    recordSkillDigest(store, {
      id: skill.id,
      digest: identity.digest,
      name: identity.name,
      version: identity.version ?? null,
    });
    store.audit.append({
      type: 'skill.recorded',
      actor: by,
      data: { skill: skill.id, name: identity.name, version: identity.version ?? null, digest: identity.digest },
    });
  }
}
