import { existsSync } from 'node:fs';
import { hostModuleDirs } from '../config/packageRoot.js';
import type { RunnerLaunch } from '../process/spawnRunner.js';
import { sandboxBackend, type Backend, type SandboxLimits, type SandboxRequest } from './backend.js';

/** A bind of a granted or host-made folder into the sandbox. */
export interface RunBind {
  source: string;
  target: string;
  readOnly: boolean;
}

/** Everything a run's sandbox is made of (runService fills it for a run, `explain` with the binding's placeholders). */
export interface RunSandboxInput {
  backend: Backend;
  runId: string;
  launch: RunnerLaunch;
  workspace: string;
  /** The runner's own folder (read-only). */
  runnerDir: string;
  /** The runner's bundle, when its entry is TypeScript (read-only, only this file of the bundle folder). */
  bundle?: string;
  /** The pinned harness CLIs (read-only when installed). */
  harnessDir: string;
  /** The binding's `readPaths`, checked by the caller (read-only). */
  readPaths: string[];
  /** Mount binds (workspace `mount` mode), the session folder, skill copies. */
  binds: RunBind[];
  limits: SandboxLimits;
  egressSocket?: string;
  gatewaySocket?: string;
  egress?: { allow: string[]; allowPrivate: boolean; beyondList?: boolean };
}

/**
 * The only host paths a run may read beyond the system: its runner folder, its own bundle, the
 * host's node_modules (the bundle's external dependencies) and harness CLIs. Nothing named by the
 * runner package (an `entry.args` path, an `entry.command`) is ever added: what an admin grants
 * comes from the binding (`readPaths`, mounts), nothing else.
 */
export function runnerReadOnly(runnerDir: string, bundle: string | undefined, harnessDir: string): string[] {
  return [runnerDir, ...(bundle ? [bundle] : []), ...[...hostModuleDirs(), harnessDir].filter((d) => existsSync(d))];
}

/** The sandbox request of a run: one function, so a run and `paddock explain` bind exactly the same. */
export function runSandboxRequest(input: RunSandboxInput): SandboxRequest {
  return {
    backend: input.backend,
    runId: input.runId,
    launch: input.launch,
    workspace: input.workspace,
    readOnly: [...runnerReadOnly(input.runnerDir, input.bundle, input.harnessDir), ...input.readPaths],
    binds: input.binds,
    limits: input.limits,
    egressSocket: input.egressSocket,
    gatewaySocket: input.gatewaySocket,
    egress: input.egress,
    // A runner that closes stdout must be seen at once (backend.ts, SandboxRequest.stdoutFifo).
    stdoutFifo: sandboxBackend(input.backend).stdoutFifo,
  };
}
