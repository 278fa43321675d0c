import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { namespaceArgs, systemArgs } from './bwrapArgs.js';
import { HOST_HELPER_ENV, hostTool } from './hostTools.js';
import {
  dedicatedUserns,
  resolveRunIdentity,
  usernsPrefix,
  USERNS_FD,
  type RunIdentity,
  type RunIdentityError,
} from './runIdentity.js';
import { RunCgroup, readCgroupLayout, type CgroupApplied } from './cgroups.js';
import { probeDiskQuota, type DiskQuotaMachine } from './diskQuota.js';

/** What this machine can enforce, and why not where it cannot (for `paddock doctor`). */
export interface MachineReport {
  bwrap: { available: boolean; path?: string; version?: string; why?: string };
  prlimit: { available: boolean; path?: string; why?: string };
  cgroups: CgroupApplied & { why?: string };
  socat: { available: boolean };
  /** The host uid/gid sandboxed runs map to (PADDOCK_RUN_UID/GID, /etc/subuid, default), or why none can be used. */
  identity: RunIdentity | RunIdentityError;
  /** Per-run disk and inode quota (ext4 images on loop devices, mounted by the host). */
  diskQuota: DiskQuotaMachine;
}

let cached: MachineReport | undefined;

/** Probe once per process: try each mechanism for real (a tiny sandbox, a throwaway cgroup). */
export function probeMachine(refresh = false): MachineReport {
  if (cached && !refresh) return cached;
  const report: MachineReport = {
    bwrap: { available: false },
    prlimit: { available: false },
    cgroups: {},
    socat: { available: hostTool('socat') !== undefined },
    identity: resolveRunIdentity(),
    diskQuota: probeDiskQuota(),
  };
  // PADDOCK_BWRAP names the binary (e.g. a build of a newer bubblewrap); unset, the system's.
  // Always an absolute path: a host helper is never found through a PATH lookup.
  const named = process.env.PADDOCK_BWRAP;
  const bwrap = named ? (isAbsolute(named) && existsSync(named) ? named : undefined) : hostTool('bwrap');
  if (!bwrap)
    report.bwrap.why = named
      ? `PADDOCK_BWRAP=${named} is not an existing absolute path`
      : 'bwrap is not installed (apt-get install bubblewrap)';
  else {
    try {
      report.bwrap.version = execFileSync(bwrap, ['--version'], { encoding: 'utf8', env: HOST_HELPER_ENV }).trim();
      // The same namespaces, identity mapping and system binds every run gets.
      const { identity } = report;
      if ('error' in identity)
        throw Object.assign(new Error(), { stderr: `no usable host identity for runs: ${identity.error}` });
      const userns = identity.mechanism === 'dedicated' ? dedicatedUserns(identity) : undefined;
      const [command, ...args] = [
        ...(userns ? usernsPrefix(userns) : []),
        bwrap,
        ...namespaceArgs(userns ? USERNS_FD : undefined),
        '--die-with-parent',
        '--cap-drop',
        'ALL',
        ...systemArgs(),
        '--',
        'true',
      ];
      execFileSync(command!, args, { stdio: 'pipe', timeout: 10_000, env: HOST_HELPER_ENV });
      report.bwrap.available = true;
      report.bwrap.path = bwrap;
    } catch (error) {
      report.bwrap.why =
        `bwrap cannot create its namespaces here: ` +
        `${String((error as { stderr?: Buffer }).stderr ?? (error as Error).message).trim()}`;
    }
  }
  const prlimit = hostTool('prlimit');
  if (prlimit) Object.assign(report.prlimit, { available: true, path: prlimit });
  else report.prlimit.why = 'prlimit is not installed (util-linux)';
  const probe = RunCgroup.create(`probe-${process.pid}`, { memoryBytes: 1 << 30, pids: 1024 }, readCgroupLayout());
  if (probe) {
    Object.assign(report.cgroups, probe.applied);
    void probe.release();
  } else report.cgroups.why = 'no writable cgroup hierarchy (not root, or cgroups not delegated)';
  cached = report;
  return report;
}
