/** The `skill_digests` table: each skill's content digest as it was when last applied (docs/gateway.md, "Skills"). */
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

/** Record (or replace) a skill's digest; the caller audits it in the same transaction. */
export function recordSkillDigest(
  store: Store,
  skill: { id: string; digest: string; name: string; version: string | null },
): void {
  dbOf(store)
    .prepare(
      'INSERT OR REPLACE INTO skill_digests (skill_id, digest, name, version, recorded_at) VALUES (?, ?, ?, ?, ?)',
    )
    .run(skill.id, skill.digest, skill.name, skill.version, new Date().toISOString());
}

/** Forget a deleted skill's digest. */
export function forgetSkillDigest(store: Store, skillId: string): void {
  dbOf(store).prepare('DELETE FROM skill_digests WHERE skill_id = ?').run(skillId);
}
