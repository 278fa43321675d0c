import { existsSync, statSync } from 'node:fs';

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

/** Probe one effect; unknown kinds and throwing probers give `unknown`. */
export function probeEffect(
  kind: string,
  probe: Record<string, unknown>,
  probers: Record<string, Prober> = PROBERS,
): ProbeVerdict {
  const prober = probers[kind];
  if (!prober) return { status: 'unknown', how: `no prober for effect kind ${kind}` };
  try {
    return prober(probe);
  } catch (error) {
    return { status: 'unknown', how: `prober failed: ${(error as Error).message}` };
  }
}
