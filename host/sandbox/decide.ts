import { sandboxBackend, type Backend } from './backend.js';
import { probeMachine, type MachineReport } from './probe.js';

/** How a binding's sandbox request maps onto this machine. */
export type SandboxDecision =
  | { ok: true; backend: Backend; degraded: string[] }
  | { ok: false; reason: 'sandbox_unavailable' | 'limits_unavailable'; message: string };

/**
 * Fail closed: a backend or a whole-run limit (memory, pids) this machine cannot enforce refuses
 * the run, unless the binding allows degrading; then what is given up is listed (and audited by
 * the caller, and shown by `explain`).
 */
export function decideSandbox(
  binding: { id: string; sandbox: Backend; allowDegrade: boolean },
  machine: MachineReport = probeMachine(),
): SandboxDecision {
  const degraded: string[] = [];
  let backend = binding.sandbox;
  const asked = sandboxBackend(backend);
  const available = asked.available(machine);
  if (!available.ok) {
    if (!binding.allowDegrade || !asked.degradesTo) {
      return {
        ok: false,
        reason: 'sandbox_unavailable',
        message:
          `binding "${binding.id}" asks for the ${asked.name} sandbox, which this host cannot run (` +
          `${available.why}); refusing rather than running it less isolated`,
      };
    }
    backend = asked.degradesTo.backend;
    degraded.push(
      `${asked.name} unavailable (${available.why}): running with the ${backend} backend, ${asked.degradesTo.loses}`,
    );
  }
  const missing = [
    !machine.cgroups.memory && 'memory',
    !machine.cgroups.pids && 'pids',
    !machine.diskQuota.available && 'disk',
  ].filter(Boolean) as string[];
  if (missing.length > 0) {
    if (!binding.allowDegrade) {
      const why = [
        !machine.cgroups.memory || !machine.cgroups.pids ? (machine.cgroups.why ?? 'no cgroup controller') : '',
        machine.diskQuota.available ? '' : machine.diskQuota.why,
      ]
        .filter(Boolean)
        .join('; ');
      return {
        ok: false,
        reason: 'limits_unavailable',
        message:
          `binding "${binding.id}": this host cannot enforce the ${missing.join(' and ')} limit (${why}); ` +
          `refusing`,
      };
    }
    degraded.push(`no ${missing.join(' or ')} limit on this host`);
  }
  return { ok: true, backend, degraded };
}
