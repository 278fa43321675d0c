import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { systemArgs } from './bwrapArgs.js';
import { RunCgroup, readCgroupLayout, type CgroupApplied } from './cgroups.js';
import { probeDiskQuota, type DiskQuotaMachine } from './diskQuota.js';

/** What this machine can enforce, and why not where it cannot (for `paddock doctor`). */
export interface MachineReport {
  bwrap: { available: boolean; path?: string; version?: string; why?: string };
  prlimit: { available: boolean; why?: string };
  cgroups: CgroupApplied & { why?: string };
  socat: { available: boolean };
  /** Per-run disk and inode quota (ext4 images on loop devices, mounted by the host). */
  diskQuota: DiskQuotaMachine;
}

let cached: MachineReport | undefined;

function which(binary: string): string | undefined {
  for (const dir of ['/usr/bin', '/bin', '/usr/local/bin', '/usr/sbin', '/sbin']) if (existsSync(`${dir}/${binary}`)) return `${dir}/${binary}`;
  return undefined;
}

/** Probe once per process: try each mechanism for real (a tiny sandbox, a throwaway cgroup). */
export function probeMachine(refresh = false): MachineReport {
  if (cached && !refresh) return cached;
  const report: MachineReport = { bwrap: { available: false }, prlimit: { available: false }, cgroups: {}, socat: { available: which('socat') !== undefined }, diskQuota: probeDiskQuota() };
  // PADDOCK_BWRAP names the binary (e.g. a build of a newer bubblewrap); unset, the system's.
  const bwrap = process.env.PADDOCK_BWRAP ? (existsSync(process.env.PADDOCK_BWRAP) ? process.env.PADDOCK_BWRAP : undefined) : which('bwrap');
  if (!bwrap) report.bwrap.why = process.env.PADDOCK_BWRAP ? `PADDOCK_BWRAP=${process.env.PADDOCK_BWRAP} does not exist` : 'bwrap is not installed (apt-get install bubblewrap)';
  else {
    try {
      report.bwrap.version = execFileSync(bwrap, ['--version'], { encoding: 'utf8' }).trim();
      // The same namespaces, identity and system binds every run gets.
      execFileSync(bwrap, ['--unshare-all', '--die-with-parent', '--cap-drop', 'ALL', '--unshare-user', '--uid', '65534', '--gid', '65534', ...systemArgs(), '--', 'true'], { stdio: 'pipe', timeout: 10_000 });
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
