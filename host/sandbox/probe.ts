import { existsSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { namespaceArgs, systemArgs } from './bwrapArgs.js';
import { HOST_HELPER_ENV, hostTool } from './hostTools.js';
import {
  dedicatedUsernsSteps,
  resolveRunIdentity,
  usernsPrefix,
  USERNS_FD,
  type RunIdentity,
  type RunIdentityError,
} from './runIdentity.js';
import { RunCgroup, readCgroupLayout, type CgroupApplied } from './cgroups.js';
import { diskQuotaProbe, type DiskQuotaMachine } from './diskQuota.js';
import { exec, runProbeAsync, runProbeSync, type Probe } from './probeSteps.js';
import { forgetProbeCache, probeCacheDir, probeCacheKey, readProbeCache, writeProbeCache } from './probeCache.js';

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
/** The probe started by {@link primeMachineProbe}, until it ends. */
let inFlight: Promise<MachineReport> | undefined;
/** Bumped by every blocking probe: an asynchronous one that began before it does not overwrite its newer report. */
let generation = 0;
/** Probes of this process so far (names each probe's throwaway cgroup). */
let probes = 0;

/**
 * Probe once per process: try each mechanism for real (a tiny sandbox, a throwaway cgroup). Without `refresh`, a
 * probe kept by an earlier process of this boot where everything worked is used instead of the helper processes
 * (probeCache.ts); `refresh` always probes.
 */
export function probeMachine(refresh = false): MachineReport {
  if (cached && !refresh) return cached;
  generation += 1;
  const identity = resolveRunIdentity();
  const kept = keptProbe(identity, refresh);
  cached = kept.probe
    ? assemble(identity, kept.probe.bwrap, kept.probe.diskQuota)
    : kept.keep(assemble(identity, runProbeSync(bwrapProbe(identity)), runProbeSync(diskQuotaProbe())));
  return cached;
}

/** Drop the probe kept for later processes (a run found the sandbox or the disk quota not working as probed). */
export function forgetMachineProbe(): void {
  forgetProbeCache();
}

/** The probe kept for this process's key (unless `refresh`), and how to keep a new one if everything worked. */
function keptProbe(identity: MachineReport['identity'], refresh: boolean) {
  const dir = probeCacheDir();
  const key = probeCacheKey(identity);
  return {
    probe: refresh ? undefined : readProbeCache(dir, key),
    keep(report: MachineReport): MachineReport {
      const { bwrap, diskQuota } = report;
      if (bwrap.available && bwrap.path && diskQuota.available)
        writeProbeCache(dir, key, {
          bwrap: { ...bwrap, available: true, path: bwrap.path },
          diskQuota: { ...diskQuota, available: true },
        });
      return report;
    },
  };
}

/**
 * The same probe as {@link probeMachine}, run without blocking: its helper processes (bwrap, unshare, mkfs, mount)
 * run while this process goes on (loading modules, opening the store), the bwrap and disk-quota checks side by side.
 * Its report becomes {@link probeMachine}'s. A probe in flight is shared; a finished one is returned, unless `refresh`.
 */
export function primeMachineProbe(refresh = false): Promise<MachineReport> {
  if (inFlight) return inFlight;
  if (cached && !refresh) return Promise.resolve(cached);
  const started = generation;
  const identity = resolveRunIdentity();
  const kept = keptProbe(identity, refresh);
  const helpers = kept.probe
    ? // Kept: only the run user namespace is made now (as the bwrap probe would have), so a launch finds it held.
      userns(identity).then(() => [kept.probe!.bwrap, kept.probe!.diskQuota] as const)
    : Promise.all([runProbeAsync(bwrapProbe(identity)), runProbeAsync(diskQuotaProbe())]);
  inFlight = helpers
    .then(([bwrap, diskQuota]) => {
      const report = assemble(identity, bwrap, diskQuota);
      if (!kept.probe) kept.keep(report);
      if (generation === started) cached = report;
      return cached ?? report;
    })
    .finally(() => {
      inFlight = undefined;
    });
  return inFlight;
}

/**
 * Test-only hook (never called by the host): take `report` as this process's machine probe, as if it had probed.
 * For test/fixtures/crashingHost.ts, whose test starts ~500 host processes on one machine: it probes once and hands
 * each host that report, so the crash matrix does not pay the probe's helper processes ~500 times. The probe itself
 * is tested in test/integration/machineProbe.test.ts.
 */
export function useMachineReportForTests(report: MachineReport): void {
  generation += 1;
  cached = report;
}

/** Make the dedicated run user namespace without blocking, where runs use one; a failure is the launch's to report. */
async function userns(identity: MachineReport['identity']): Promise<void> {
  if ('error' in identity || identity.mechanism !== 'dedicated') return;
  await runProbeAsync(dedicatedUsernsSteps(identity)).catch(() => undefined);
}

/** The report from the probes that run helpers, plus the checks that need none (tools present, a throwaway cgroup). */
function assemble(
  identity: MachineReport['identity'],
  bwrap: MachineReport['bwrap'],
  diskQuota: DiskQuotaMachine,
): MachineReport {
  const report: MachineReport = {
    bwrap,
    prlimit: { available: false },
    cgroups: {},
    socat: { available: hostTool('socat') !== undefined },
    identity,
    diskQuota,
  };
  const prlimit = hostTool('prlimit');
  if (prlimit) Object.assign(report.prlimit, { available: true, path: prlimit });
  else report.prlimit.why = 'prlimit is not installed (util-linux)';
  const probe = RunCgroup.create(
    `probe-${process.pid}-${++probes}`,
    { memoryBytes: 1 << 30, pids: 1024 },
    readCgroupLayout(),
  );
  if (probe) {
    Object.assign(report.cgroups, probe.applied);
    probe.discard();
  } else report.cgroups.why = 'no writable cgroup hierarchy (not root, or cgroups not delegated)';
  return report;
}

/** Whether bwrap can make a run's sandbox here: the binary, then a real sandbox running `true`. */
function* bwrapProbe(identity: MachineReport['identity']): Probe<MachineReport['bwrap']> {
  const report: MachineReport['bwrap'] = { available: false };
  // PADDOCK_BWRAP names the binary (e.g. a build of a newer bubblewrap); unset, the system's.
  // Always an absolute path: a host helper is never found through a PATH lookup.
  const named = process.env.PADDOCK_BWRAP;
  const bwrap = named ? (isAbsolute(named) && existsSync(named) ? named : undefined) : hostTool('bwrap');
  if (!bwrap) {
    report.why = named
      ? `PADDOCK_BWRAP=${named} is not an existing absolute path`
      : 'bwrap is not installed (apt-get install bubblewrap)';
    return report;
  }
  try {
    report.version = (yield* exec(bwrap, ['--version'], HOST_HELPER_ENV)).trim();
    // The same namespaces, identity mapping and system binds every run gets.
    if ('error' in identity)
      throw Object.assign(new Error(), { stderr: `no usable host identity for runs: ${identity.error}` });
    const userns = identity.mechanism === 'dedicated' ? yield* dedicatedUsernsSteps(identity) : undefined;
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
    yield* exec(command!, args, HOST_HELPER_ENV);
    report.available = true;
    report.path = bwrap;
  } catch (error) {
    report.why =
      `bwrap cannot create its namespaces here: ` +
      `${String((error as { stderr?: string }).stderr ?? (error as Error).message).trim()}`;
  }
  return report;
}
