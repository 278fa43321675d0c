/** The `skill_digests` table: each skill's content digest as it was when last applied (docs/gateway.md, "Skills"). */
import { dialectOf, type Dialect } from './db.js';
import { tenantOfSpec } from './dialectSql.js';
import { dbOf, type Store } from './store.js';

/** The recorded digest of one skill (null when never recorded). */
export function recordedSkillDigest(store: Store, skillId: string): string | null {
  return (
    (dbOf(store).prepare('SELECT digest FROM skill_digests WHERE skill_id = ?').pluck().get(skillId) as
      string | undefined) ?? null
  );
}

/** Every recorded digest, by skill id. */
export function recordedSkillDigests(store: Store): Map<string, string> {
  return new Map(
    (
      dbOf(store).prepare('SELECT skill_id AS id, digest FROM skill_digests').all() as { id: string; digest: string }[]
    ).map((r) => [r.id, r.digest]),
  );
}

/** Record (or replace) a skill's digest, clearing what runs found changed; the caller audits it (same transaction). */
export function recordSkillDigest(
  store: Store,
  skill: { id: string; digest: string; name: string; version: string | null },
): void {
  dbOf(store)
    .prepare(
      // One upsert for both stores (SQLite's INSERT OR REPLACE has no PostgreSQL twin): every column replaced, the
      // change a run found cleared.
      'INSERT INTO skill_digests (skill_id, digest, name, version, recorded_at) VALUES (?, ?, ?, ?, ?) ' +
        'ON CONFLICT (skill_id) DO UPDATE SET digest = excluded.digest, name = excluded.name, ' +
        'version = excluded.version, recorded_at = excluded.recorded_at, changed_digest = NULL, changed_at = NULL, ' +
        'changed_run_id = NULL',
    )
    .run(skill.id, skill.digest, skill.name, skill.version, new Date().toISOString());
}

/**
 * Re-applying a skill whose content is back at its recorded digest: nothing to record, but what runs found changed
 * no longer stands (applying accepts the content as it is). Answers whether a change was cleared.
 */
export function clearSkillChange(store: Store, skillId: string): boolean {
  return (
    dbOf(store)
      .prepare(
        'UPDATE skill_digests SET changed_digest = NULL, changed_at = NULL, changed_run_id = NULL ' +
          'WHERE skill_id = ? AND changed_digest IS NOT NULL',
      )
      .run(skillId).changes > 0
  );
}

/**
 * A run found skill `id`'s content at `digest`, not its recorded one: kept on the skill's row (the latest such run
 * wins) until the skill is applied again. A skill never recorded has no row and keeps none (the run audits it).
 */
export function noteSkillChanged(
  store: Store,
  change: { id: string; digest: string; at: string; runId: string },
): void {
  dbOf(store)
    .prepare('UPDATE skill_digests SET changed_digest = ?, changed_at = ?, changed_run_id = ? WHERE skill_id = ?')
    .run(change.digest, change.at, change.runId, change.id);
}

/** What the store knows of one skill's content: the digest recorded at apply, and what a run found since. */
export interface SkillState {
  id: string;
  /** Null when the skill was never recorded (then `name`, `version`, `recordedAt` are null too). */
  digest: string | null;
  name: string | null;
  version: string | null;
  recordedAt: string | null;
  /** The last run that found other content than `digest` since the skill was applied; null: none did. */
  changed: { digest: string; at: string; runId: string } | null;
}

/** The SQL of {@link skillStatesOfTenant} in `dialect`: the tenant's index range, each digest by key. */
const skillStatesSql = (dialect: Dialect) =>
  'SELECT o.id AS id, d.digest AS digest, d.name AS name, d.version AS version, d.recorded_at AS recordedAt, ' +
  'd.changed_digest AS changedDigest, d.changed_at AS changedAt, d.changed_run_id AS changedRunId ' +
  'FROM config_objects o INDEXED BY config_objects_by_tenant LEFT JOIN skill_digests d ON d.skill_id = o.id ' +
  `WHERE o.kind = 'skill' AND ${tenantOfSpec(dialect)} = ? ORDER BY o.id`;

/** SQLite's {@link skillStatesOfTenant} statement (a test reads its plan). */
export const SKILL_STATES_SQL = skillStatesSql('sqlite');

/**
 * The state of each skill `tenant` holds, by id: its config objects (config_objects_by_tenant, one index range), each
 * joined to its digest row by key. Skill ids are unique across tenants while stored, and a deleted skill's row is
 * forgotten with it, so a row is its current owner's.
 */
export function skillStatesOfTenant(store: Store, tenant: string): SkillState[] {
  const db = dbOf(store);
  const rows = db.prepare(skillStatesSql(dialectOf(db))).all(tenant) as (Omit<SkillState, 'changed'> & {
    changedDigest: string | null;
    changedAt: string | null;
    changedRunId: string | null;
  })[];
  return rows.map(({ changedDigest, changedAt, changedRunId, ...r }) => ({
    ...r,
    changed: changedDigest !== null ? { digest: changedDigest, at: changedAt ?? '', runId: changedRunId ?? '' } : null,
  }));
}

/** Forget a deleted skill's digest. */
export function forgetSkillDigest(store: Store, skillId: string): void {
  dbOf(store).prepare('DELETE FROM skill_digests WHERE skill_id = ?').run(skillId);
}
