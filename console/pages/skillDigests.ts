// Skill digests and change flags from the audit records the tenant may read (GET /v1/audit/export): the digest
// recorded when a skill was applied (`skill.recorded`), and whether a run found its content changed since
// (`skill.changed`). GET /v1/resources does not carry them, so this walks the export, a bounded number of pages.
import type { Api } from '../lib/api.js';

/** What the audit says about one skill. */
export interface SkillDigest {
  /** The digest accepted at the last apply that listed it. */
  recorded?: string;
  recordedAt?: string;
  /** The last run that found other content than the recorded digest (after that apply), if any. */
  changed?: { digest: string; at: string; runId: string | null };
}

/** How many export pages (500 records each) the page reads at most; past it the answer says it is partial. */
export const MAX_AUDIT_PAGES = 20;

interface AuditRecord {
  type: string;
  at: string;
  runId: string | null;
  data: { skill?: unknown; digest?: unknown };
}

/** Digests by skill id, and whether the walk stopped before the end of the log. */
export async function skillDigests(
  api: Api,
  signal: AbortSignal,
): Promise<{ bySkill: Map<string, SkillDigest>; partial: boolean }> {
  const bySkill = new Map<string, SkillDigest>();
  let after = 0;
  for (let page = 0; page < MAX_AUDIT_PAGES; page++) {
    const answer = await api.get<{ records: AuditRecord[]; next: number; more: boolean }>(
      `/v1/audit/export?format=json&limit=1000&after=${after}`,
      signal,
    );
    for (const r of answer.records) {
      if (typeof r.data?.skill !== 'string' || typeof r.data.digest !== 'string') continue;
      const entry = bySkill.get(r.data.skill) ?? {};
      // A new recorded digest accepts the content as it is: earlier change flags no longer apply.
      if (r.type === 'skill.recorded') bySkill.set(r.data.skill, { recorded: r.data.digest, recordedAt: r.at });
      else if (r.type === 'skill.changed')
        bySkill.set(r.data.skill, { ...entry, changed: { digest: r.data.digest, at: r.at, runId: r.runId } });
    }
    if (!answer.more) return { bySkill, partial: false };
    after = answer.next;
  }
  return { bySkill, partial: true };
}
