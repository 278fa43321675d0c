import { cpSync, mkdirSync, symlinkSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { ResourceIndex, RunAccess } from '../authz/runAccess.js';
import { insideRoots } from '../util/insideRoots.js';
import type { RunWorkspace } from './workspace.js';

/** Handles to granted files and folders, as paths inside the run's workspace. */
export interface MaterializedGrants {
  skills: { id: string; name: string; path: string }[];
  artifacts: { id: string; name: string; path: string }[];
  mounts: { id: string; path: string; readOnly: boolean }[];
  /** Mounts the sandbox must bind (source → target inside the workspace). */
  binds: { source: string; target: string; readOnly: boolean }[];
}

/** A resource name used as one path segment: no separators, no `.`/`..`. */
function segment(name: string, what: string): string {
  if (basename(name) !== name || name === '.' || name === '..' || name.length === 0)
    throw new Error(`${what} name ${JSON.stringify(name)} is not a plain file name`);
  return name;
}

/**
 * Put what the access grants into the workspace, so the runner only ever sees paths inside
 * it: artifacts are copied to `in/artifacts/<name>`, skills to `in/skills/<name>/`; mounts are
 * copied to `in/mounts/<id>/` in `copy` mode, or linked there in `mount` mode. With the `process`
 * backend a link is an ordinary symlink and read-only is NOT enforced (the bwrap backend binds it).
 */
export function materializeGrants(
  ws: RunWorkspace,
  access: RunAccess,
  resources: ResourceIndex,
  mode: 'copy' | 'mount',
  mountRoots: readonly string[],
  /** The sandbox binds mounts itself (bwrap): leave an empty mount point instead of a link. */
  sandboxBinds = false,
): MaterializedGrants {
  const out: MaterializedGrants = { skills: [], artifacts: [], mounts: [], binds: [] };
  const dir = (name: string) => {
    const path = join(ws.in, name);
    mkdirSync(path, { recursive: true, mode: 0o700 });
    return path;
  };
  for (const a of access.artifacts) {
    const path = join(dir('artifacts'), segment(a.name, 'artifact'));
    cpSync(resources.artifacts.get(a.id)!.path, path, { dereference: true });
    out.artifacts.push({ ...a, path });
  }
  for (const s of access.skills) {
    const path = join(dir('skills'), segment(s.name, 'skill'));
    // Links inside a skill stay links: a copy never pulls in a file from outside the skill's folder.
    cpSync(resources.skills.get(s.id)!.path, path, { recursive: true, verbatimSymlinks: true });
    out.skills.push({ ...s, path });
  }
  for (const m of access.mounts) {
    const path = join(dir('mounts'), segment(m.id, 'mount'));
    // Checked again now, not only at apply: the roots or the links under them may have changed since.
    const source = insideRoots(resources.mounts.get(m.id)!.path, mountRoots);
    if (!source) throw new Error(`mount ${m.id} is no longer a directory under an allowed mount root`);
    if (mode === 'mount' && sandboxBinds) {
      mkdirSync(path, { mode: 0o700 });
      out.binds.push({ source, target: path, readOnly: m.readOnly });
    } else if (mode === 'mount') symlinkSync(source, path, 'dir');
    else cpSync(source, path, { recursive: true, verbatimSymlinks: true });
    out.mounts.push({ ...m, path });
  }
  return out;
}
