import type { IsolationReport } from '../process/isolationReport.js';
import {
  sandboxBackend,
  type Backend,
  type NetworkFacts,
  type PreparedSandbox,
  type SandboxLimits,
  type SandboxRequest,
} from './backend.js';
import type { CgroupApplied } from './cgroups.js';
import { probeMachine, type MachineReport } from './probe.js';
import type { DiskApplied } from './runDiskQuota.js';
import { wantsEgressProxy, type EgressReachInput } from '../policy/egressReach.js';

// The names callers import from here; each call goes to the backend named in its arguments
// (host/sandbox/backend.ts), so nothing here decides anything per backend.
export {
  BACKENDS,
  type Backend,
  type NetworkFacts,
  type PreparedSandbox,
  type SandboxLimits,
  type SandboxRequest,
} from './backend.js';
export { EGRESS, GATEWAY } from './bwrapArgs.js';

/**
 * Whether a run of `backend` for this binding gets the host egress proxy ({@link SandboxBackend.startsEgressProxy}).
 */
export function startsEgressProxy(backend: Backend, binding: EgressReachInput): boolean {
  return sandboxBackend(backend).startsEgressProxy(wantsEgressProxy(binding));
}

/** The one description of a run's network ({@link SandboxBackend.describeNetwork}). */
export function networkDescription(backend: Backend, n: NetworkFacts): string {
  return sandboxBackend(backend).describeNetwork(n);
}

/** What `backend` enforces with these limits on this machine ({@link SandboxBackend.report}). */
export function isolationReport(
  backend: Backend,
  l: SandboxLimits,
  machine: MachineReport,
  applied: CgroupApplied,
  net?: NetworkFacts,
  disk?: DiskApplied | 'none',
): IsolationReport {
  return sandboxBackend(backend).report(l, machine, applied, net, disk);
}

/** Wrap a runner launch in its backend's sandbox ({@link SandboxBackend.prepare}); fails closed. */
export function prepareSandbox(input: SandboxRequest, machine: MachineReport = probeMachine()): PreparedSandbox {
  return sandboxBackend(input.backend).prepare(input, machine);
}
