import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { namespaceArgs, systemArgs } from './bwrapArgs.js';
import { dedicatedUserns, resolveRunIdentity, usernsPrefix, USERNS_FD, type RunIdentity, type RunIdentityError } from './runIdentity.js';
import { RunCgroup, readCgroupLayout, type CgroupApplied } from './cgroups.js';

/** What this machine can enforce, and why not where it cannot (for `paddock doctor`). */
export interface MachineReport {
  bwrap: { available: boolean; path?: string; version?: string; why?: string };
  prlimit: { available: boolean; why?: string };
  cgroups: CgroupApplied & { why?: string };
  socat: { available: boolean };
  /** The host uid/gid sandboxed runs map to (PADDOCK_RUN_UID/GID, /etc/subuid, default), or why none can be used. */
  identity: RunIdentity | RunIdentityError;
}

let cached: MachineReport | undefined;

function which(binary: string): string | undefined {
  for (const dir of ['/usr/bin', '/bin', '/usr/local/bin', '/usr/sbin', '/sbin']) if (existsSync(`${dir}/${binary}`)) return `${dir}/${binary}`;
  return undefined;
}

/** Probe once per process: try each mechanism for real (a tiny sandbox, a throwaway cgroup). */
export function probeMachine(refresh = false): MachineReport {
  if (cached && !refresh) return cached;
  const report: MachineReport = { bwrap: { available: false }, prlimit: { available: false }, cgroups: {}, socat: { available: which('socat') !== undefined }, identity: resolveRunIdentity() };
  // PADDOCK_BWRAP names the binary (e.g. a build of a newer bubblewrap); unset, the system's.
  const bwrap = process.env.PADDOCK_BWRAP ? (existsSync(process.env.PADDOCK_BWRAP) ? process.env.PADDOCK_BWRAP : undefined) : which('bwrap');
  if (!bwrap) report.bwrap.why = process.env.PADDOCK_BWRAP ? `PADDOCK_BWRAP=${process.env.PADDOCK_BWRAP} does not exist` : 'bwrap is not installed (apt-get install bubblewrap)';
  else {
    try {
      report.bwrap.version = execFileSync(bwrap, ['--version'], { encoding: 'utf8' }).trim();
      // The same namespaces, identity mapping and system binds every run gets.
      const { identity } = report;
      if ('error' in identity) throw Object.assign(new Error(), { stderr: `no usable host identity for runs: ${identity.error}` });
      const userns = identity.mechanism === 'dedicated' ? dedicatedUserns(identity) : undefined;
      const [command, ...args] = [...(userns ? usernsPrefix(userns) : []), bwrap, ...namespaceArgs(userns ? USERNS_FD : undefined), '--die-with-parent', '--cap-drop', 'ALL', ...systemArgs(), '--', 'true'];
      execFileSync(command!, args, { stdio: 'pipe', timeout: 10_000 });
      report.bwrap.available = true;
      report.bwrap.path = bwrap;
    } catch (error) {
      report.bwrap.why = `bwrap cannot create its namespaces here: ${String((error as { stderr?: Buffer }).stderr ?? (error as Error).message).trim()}`;
    }
  }
  if (which('prlimit')) report.prlimit.available = true;
  else report.prlimit.why = 'prlimit is not installed (util-linux)';
  const probe = RunCgroup.create(`probe-${process.pid}`, { memoryBytes: 1 << 30, pids: 1024 }, readCgroupLayout());
  if (probe) {
    Object.assign(report.cgroups, probe.applied);
    probe.release();
  } else report.cgroups.why = 'no writable cgroup hierarchy (not root, or cgroups not delegated)';
  cached = report;
  return report;
}
