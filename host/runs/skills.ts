import type { Store } from '../state/store.js';
import { recordedSkillDigest } from '../state/skillDigests.js';
import { makeFilesReadOnly, readSkill } from '../bindings/skillDigest.js';
import { sandboxBackend, type Backend } from '../sandbox/backend.js';

/** A granted skill as the run sees it. */
export interface SkillHandle {
  [key: string]: unknown;
  id: string;
  name: string;
  path: string;
  version?: string;
  digest: string;
  changed: boolean;
}

/** A skill whose content differs from the digest recorded when it was applied. */
export interface ChangedSkill {
  skill: string;
  name: string;
  digest: string;
  recorded: string | null;
}

/**
 * Identify the skills copied into a run's workspace and make them read-only: under bwrap each
 * copy is bound read-only over itself; the process backend can only drop write permission (a
 * runner running as the file's owner or root could restore it — said in docs/security-model.md).
 * A skill whose content differs from its recorded digest is reported through `onChanged`.
 */
export function checkSkills(
  store: Store,
  copies: { id: string; name: string; path: string }[],
  backend: Backend,
  onChanged: (c: ChangedSkill) => void,
) {
  const handles: SkillHandle[] = [];
  const binds: { source: string; target: string; readOnly: boolean }[] = [];
  for (const copy of copies) {
    const identity = readSkill(copy.path, copy.name);
    const recorded = recordedSkillDigest(store, copy.id);
    const changed = recorded !== identity.digest;
    if (changed) onChanged({ skill: copy.id, name: identity.name, digest: identity.digest, recorded });
    handles.push({
      ...copy,
      ...(identity.version ? { version: identity.version } : {}),
      digest: identity.digest,
      changed,
    });
    if (sandboxBackend(backend).bindsGrants) binds.push({ source: copy.path, target: copy.path, readOnly: true });
    else makeFilesReadOnly(copy.path);
  }
  return { handles, binds };
}
