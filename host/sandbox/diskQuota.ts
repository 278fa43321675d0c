import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  realpathSync,
  rmSync,
  rmdirSync,
  statfsSync,
  chmodSync,
  closeSync,
  openSync,
  ftruncateSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { chmod, rm, rmdir } from 'node:fs/promises';
import { execThroughSpawner } from './helperSpawner.js';
import { loopDeviceOf, mountedFrom, waitDetached, waitDetachedAsync } from './loopDevices.js';
import { dirname, join } from 'node:path';
import { HOST_HELPER_ENV, hostTool } from './hostTools.js';
import { exec, runProbeAsync, runProbeSync, type Probe } from './probeSteps.js';

/**
 * Per-run disk and inode quota (docs/security-model.md, "Disk quota"): each writable place of a
 * run (its workspace, its session folder) is its own ext4 filesystem in a sparse image file on a
 * loop device, mounted by the host (root) with nosuid,nodev. The kernel refuses the write that
 * would pass `diskBytes` or the file that would pass `inodes` (ENOSPC); nothing is ever written
 * past the limit onto the host's disk.
 */

/** Host-side helpers run by absolute path with a fixed environment, never the runner's (hostTools.ts). */
const HELPER_ENV = { ...HOST_HELPER_ENV, LC_ALL: 'C' };

/** Whether this machine can mount quota images, with the helpers it uses, or why not. */
export interface DiskQuotaMachine {
  available: boolean;
  mechanism?: string;
  why?: string;
  tools?: { mkfs: string; mount: string; umount: string };
}

const tool = hostTool;

const HELPER_TIMEOUT_MS = 30_000;

function run(path: string, args: string[]): void {
  execFileSync(path, args, { env: HELPER_ENV, stdio: 'pipe', timeout: HELPER_TIMEOUT_MS });
}

/** Try the whole mechanism once (make, mount, write, unmount a tiny image): what `doctor` and every run rely on. */
export function probeDiskQuota(): DiskQuotaMachine {
  return runProbeSync(diskQuotaProbe());
}

/** {@link probeDiskQuota} as probe steps (probeSteps.ts): the host's start runs it without blocking. */
export function* diskQuotaProbe(): Probe<DiskQuotaMachine> {
  if (process.getuid?.() !== 0)
    return { available: false, why: 'mounting a quota image needs root (the host runs unprivileged)' };
  const mkfs = tool('mkfs.ext4');
  const mount = tool('mount');
  const umount = tool('umount');
  if (!mkfs || !mount || !umount)
    return {
      available: false,
      why:
        `missing ` +
        `${[!mkfs && 'mkfs.ext4 (e2fsprogs)', !mount && 'mount', !umount && 'umount'].filter(Boolean).join(', ')}`,
    };
  const tools = { mkfs, mount, umount };
  const dir = mkdtempSync(join(tmpdir(), 'paddock-quota-probe-'));
  const image = join(dir, 'probe.img');
  const point = join(dir, 'mnt');
  try {
    mkdirSync(point);
    yield* makeImage(tools, image, 8 * 1024 * 1024, 64, false);
    yield* exec(mount, mountArgs(image, point), HELPER_ENV, HELPER_TIMEOUT_MS);
    // Run without blocking, the probe may be mid-way when the host exits (a second Ctrl-C): its mount goes then.
    probeMounts.add(point);
    hookExit();
    try {
      statfsSync(point);
    } finally {
      yield* exec(umount, [point], HELPER_ENV, HELPER_TIMEOUT_MS);
      probeMounts.delete(point);
    }
    return { available: true, mechanism: 'ext4 image on a loop device', tools };
  } catch (error) {
    const text = String((error as { stderr?: string }).stderr ?? (error as Error).message).trim();
    return { available: false, why: `cannot mount a loop image here: ${text.split('\n')[0]}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Probe images mounted right now (between the probe's mount and unmount steps). */
const probeMounts = new Set<string>();

function mountArgs(image: string, point: string): string[] {
  return ['-t', 'ext4', '-o', 'loop,nosuid,nodev,noatime', image, point];
}

/** A sparse image of `bytes` holding an empty ext4 with at least `inodes` inodes, no reserved blocks. */
function* makeImage(
  tools: NonNullable<DiskQuotaMachine['tools']>,
  image: string,
  bytes: number,
  inodes: number,
  journal: boolean,
): Probe<void> {
  const fd = openSync(image, 'wx', 0o600);
  try {
    ftruncateSync(fd, bytes);
  } finally {
    closeSync(fd);
  }
  yield* exec(
    tools.mkfs,
    [
      '-q',
      '-F',
      '-m',
      '0',
      '-N',
      String(inodes),
      '-O',
      journal ? 'has_journal' : '^has_journal',
      '-E',
      'lazy_itable_init=1,nodiscard,root_owner=0:0',
      '-L',
      'paddock',
      image,
    ],
    HELPER_ENV,
    HELPER_TIMEOUT_MS,
  );
}

/** What the mounted filesystem itself says it holds (statfs): the figures every report uses. */
export interface QuotaFigures {
  capacityBytes: number;
  inodes: number;
  freeBytes: number;
  freeInodes: number;
}

/** Free space below this counts as "the limit was reached" (ext4 keeps a few blocks it never hands out). */
const FULL_BYTES = 1024 * 1024;

function figures(point: string): QuotaFigures {
  const s = statfsSync(point);
  return { capacityBytes: s.blocks * s.bsize, inodes: s.files, freeBytes: s.bavail * s.bsize, freeInodes: s.ffree };
}

/** Quota filesystems mounted by this process and not released yet. */
const live = new Set<QuotaMount>();
let exitHook = false;

/**
 * On any host exit (process.exit, a second Ctrl-C, an uncaught error), detach every quota mount
 * still held (lazily: the runner's processes are being SIGKILLed by the same exit); images stay
 * for the next start's sweep. A SIGKILLed host leaves them to that sweep entirely.
 */
function detachAllOnExit(): void {
  const umount = tool('umount');
  const points = [...[...live].map((m) => [m.umountPath, m.point]), ...[...probeMounts].map((p) => [umount, p])];
  for (const [path, point] of points) {
    try {
      if (path) execFileSync(path, ['-l', point!], { env: HELPER_ENV, stdio: 'ignore', timeout: 5_000 });
    } catch {
      // Best effort: the process is exiting.
    }
  }
  for (const point of probeMounts) rmSync(dirname(point), { recursive: true, force: true });
  live.clear();
  probeMounts.clear();
}

function hookExit(): void {
  if (exitHook) return;
  exitHook = true;
  process.on('exit', detachAllOnExit);
}

/** One mounted quota filesystem of a run. */
export class QuotaMount {
  private reachedBytes = false;
  private reachedInodes = false;
  /** Full when mounted (a session folder an earlier run filled): not this run's doing until it frees space. */
  private fullAtStart: { bytes: boolean; inodes: boolean };

  constructor(
    readonly what: 'workspace' | 'session folder',
    readonly point: string,
    readonly image: string,
    private readonly tools: NonNullable<DiskQuotaMachine['tools']>,
    private readonly persistent: boolean,
  ) {
    const f = figures(point);
    this.fullAtStart = { bytes: f.freeBytes < FULL_BYTES, inodes: f.freeInodes === 0 };
    live.add(this);
    hookExit();
  }

  /** The umount helper (for the exit hook). */
  get umountPath(): string {
    return this.tools.umount;
  }

  /** The filesystem's own figures now. */
  figures(): QuotaFigures {
    return figures(this.point);
  }

  /** Look at the filesystem and remember whether it was full; cheap (one statfs). */
  sample(): void {
    try {
      const f = figures(this.point);
      const fullBytes = f.freeBytes < FULL_BYTES;
      const fullInodes = f.freeInodes === 0;
      if (fullBytes && !this.fullAtStart.bytes) this.reachedBytes = true;
      if (fullInodes && !this.fullAtStart.inodes) this.reachedInodes = true;
      // Once the run freed space, filling it again is its own doing.
      if (!fullBytes) this.fullAtStart.bytes = false;
      if (!fullInodes) this.fullAtStart.inodes = false;
    } catch {
      /* unmounted already */
    }
  }

  /** Which limits this run reached at any sample, and which were still full from earlier runs. */
  reached(): { bytes: boolean; inodes: boolean; fullBefore: { bytes: boolean; inodes: boolean } } {
    return { bytes: this.reachedBytes, inodes: this.reachedInodes, fullBefore: { ...this.fullAtStart } };
  }

  /**
   * Unmount (lazily when busy: nothing of the run is left running by then, but an open
   * descriptor in the host may linger), wait until the kernel has let go of the filesystem, and,
   * for a workspace, delete its image.
   */
  release(): void {
    // The kernel shows real paths: compare with those.
    live.delete(this);
    const device = loopDeviceOf(realpathSync(this.point));
    const image = realpathSync(this.image);
    try {
      run(this.tools.umount, [this.point]);
    } catch {
      run(this.tools.umount, ['-l', this.point]);
    }
    if (device) waitDetached(device, image);
    if (!this.persistent) rmSync(this.image, { force: true });
  }

  /**
   * {@link release} without blocking the event loop: umount through the helper spawner, the wait for the loop device
   * polled on a timer, the image (a large sparse file) deleted off the main thread.
   */
  async releaseAsync(): Promise<void> {
    live.delete(this);
    const device = loopDeviceOf(realpathSync(this.point));
    const image = realpathSync(this.image);
    const umount = (args: string[]) =>
      runProbeAsync(exec(this.tools.umount, args, HELPER_ENV, HELPER_TIMEOUT_MS), execThroughSpawner);
    try {
      await umount([this.point]);
    } catch {
      await umount(['-l', this.point]);
    }
    if (device) await waitDetachedAsync(device, image);
    if (!this.persistent) await rm(this.image, { force: true });
  }
}

/** Where the images live: `<data>/quota/{workspaces,sessions}/<id>.img`, never visible to a run. */
export function quotaImage(dataDir: string, kind: 'workspaces' | 'sessions', id: string): string {
  return join(dataDir, 'quota', kind, `${id}.img`);
}

/**
 * Mount a quota filesystem on `point` (an existing, empty directory). A workspace image is made
 * fresh (no journal: it dies with the run); a session image is made on the session's first run
 * (with a journal: it is kept) and mounted again by each later run — its size stays what it was
 * made with. The root of the filesystem gets mode 0700 and no `lost+found`. Blocking (tests, tools);
 * a run mounts with {@link mountQuotaAsync}.
 */
export function mountQuota(
  machine: DiskQuotaMachine,
  point: string,
  image: string,
  limits: { diskBytes: number; inodes: number },
  what: 'workspace' | 'session folder',
): QuotaMount {
  const made = runProbeSync(mountQuotaSteps(machine, point, image, limits, what));
  if (made.fresh) {
    rmdirSync(join(point, 'lost+found'));
    chmodSync(point, 0o700);
  }
  return new QuotaMount(what, point, image, made.tools, what === 'session folder');
}

/**
 * {@link mountQuota} without blocking the event loop: mkfs and mount are started by the helper spawner
 * (helperSpawner.ts) and awaited, so a run's start costs the host's event loop no fork and no wait.
 */
export async function mountQuotaAsync(
  machine: DiskQuotaMachine,
  point: string,
  image: string,
  limits: { diskBytes: number; inodes: number },
  what: 'workspace' | 'session folder',
): Promise<QuotaMount> {
  const made = await runProbeAsync(mountQuotaSteps(machine, point, image, limits, what), execThroughSpawner);
  // On a fresh filesystem these wait for its first metadata writes (≈ 16 ms each in the profile): off the loop too.
  if (made.fresh) {
    await rmdir(join(point, 'lost+found'));
    await chmod(point, 0o700);
  }
  return new QuotaMount(what, point, image, made.tools, what === 'session folder');
}

/**
 * After a failed mount of a fresh image: a `mount` that failed late, or that its timeout killed, may have mounted all
 * the same (seen in 400-run bursts: the run's clean-up then deleted the image and left the mount until the data
 * folder's next start). The image did not exist before this attempt, so a mount of it on the point is this attempt's
 * own: detached lazily (nothing of the run has started). Never throws: the mount's own error is what the run reports.
 */
function* undoMountOf(umount: string, point: string, image: string): Probe<void> {
  let mounted: boolean;
  try {
    mounted = mountedFrom(realpathSync(point), realpathSync(image));
  } catch {
    return; // the point or the image is gone: nothing of this attempt can be mounted from it
  }
  if (!mounted) return;
  try {
    yield* exec(umount, ['-l', point], HELPER_ENV, HELPER_TIMEOUT_MS);
  } catch {
    // Left to the next start's quota sweep, as before; the run fails either way.
  }
}

/**
 * The helper programs of {@link mountQuota}, as probe steps (probeSteps.ts): one logic for both drivers. Whether the
 * image was made now (its `lost+found` is then removed and its root made 0700 by the caller).
 */
function* mountQuotaSteps(
  machine: DiskQuotaMachine,
  point: string,
  image: string,
  limits: { diskBytes: number; inodes: number },
  what: 'workspace' | 'session folder',
): Probe<{ fresh: boolean; tools: NonNullable<DiskQuotaMachine['tools']> }> {
  if (!machine.available || !machine.tools) throw new Error(`disk quota unavailable: ${machine.why}`);
  const persistent = what === 'session folder';
  mkdirSync(join(image, '..'), { recursive: true, mode: 0o700 });
  const fresh = !existsSync(image);
  if (fresh) yield* makeImage(machine.tools, image, limits.diskBytes, limits.inodes, persistent);
  mkdirSync(point, { recursive: true, mode: 0o700 });
  try {
    yield* exec(machine.tools.mount, mountArgs(image, point), HELPER_ENV, HELPER_TIMEOUT_MS);
  } catch (error) {
    if (fresh) {
      yield* undoMountOf(machine.tools.umount, point, image);
      rmSync(image, { force: true });
    }
    throw new Error(
      `could not mount the ${what} quota image: ` +
        `${String((error as { stderr?: string }).stderr ?? (error as Error).message).trim()}`,
    );
  }
  return { fresh, tools: machine.tools };
}
