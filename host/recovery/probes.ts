import { existsSync, realpathSync, statSync } from 'node:fs';
import { resolve } from 'node:path';

/** What a prober found out about an effect whose result was never logged. */
export type ProbeVerdict = { status: 'succeeded' | 'failed' | 'still_running' | 'unknown'; how: string };

/** Decides the fate of one kind of effect from its recorded probe spec. */
export type Prober = (probe: Record<string, unknown>) => ProbeVerdict;

/**
 * Probers for the host-side effects the host performs today. An effect kind without a prober is
 * `unknown`: the host never guesses, and never re-runs it.
 */
export const PROBERS: Record<string, Prober> = {
  'workspace.create': (probe) => {
    const path = String(probe.path);
    return existsSync(path) && statSync(path).isDirectory()
      ? { status: 'succeeded', how: `workspace ${path} exists` }
      : { status: 'failed', how: `workspace ${path} does not exist` };
  },
  'workspace.remove': (probe) => {
    const path = String(probe.path);
    return existsSync(path)
      ? { status: 'failed', how: `workspace ${path} is still there` }
      : { status: 'succeeded', how: `workspace ${path} is gone` };
  },
};

/**
 * Probe one effect; unknown kinds and throwing probers give `unknown`. With `dataDir`, a probe whose path is not in
 * that data folder gives `unknown` too: what is (or is not) at a path recorded by a folder since moved, or on another
 * machine restored with the same host id, says nothing about the effect (the outside attack's finding 2: a moved
 * folder's workspace, there under its new path, was decided "failed" by its old one).
 */
export function probeEffect(
  kind: string,
  probe: Record<string, unknown>,
  probers: Record<string, Prober> = PROBERS,
  dataDir?: string,
): ProbeVerdict {
  const prober = probers[kind];
  if (!prober) return { status: 'unknown', how: `no prober for effect kind ${kind}` };
  if (dataDir !== undefined && typeof probe.path === 'string' && !inFolder(probe.path, dataDir))
    return { status: 'unknown', how: `${probe.path} is not in this host's data folder ${dataDir}: cannot tell` };
  try {
    return prober(probe);
  } catch (error) {
    return { status: 'unknown', how: `prober failed: ${(error as Error).message}` };
  }
}

/** Whether `path` is inside `dir`, as written or as `dir` resolves (a data folder named through a symlink). */
function inFolder(path: string, dir: string): boolean {
  const target = resolve(path);
  const roots = [resolve(dir)];
  try {
    roots.push(realpathSync(dir));
  } catch {
    // A data folder that cannot be resolved holds nothing to probe; its name as written is still compared.
  }
  return roots.some((root) => target.startsWith(`${root}/`));
}
