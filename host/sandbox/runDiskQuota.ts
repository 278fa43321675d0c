import {
  chmodSync,
  copyFileSync,
  lchownSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readlinkSync,
  renameSync,
  rmdirSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import type { DiskQuotaMachine, QuotaFigures, QuotaMount } from './diskQuota.js';
import { mountQuotaAsync, quotaImage } from './diskQuota.js';

/** The quota filesystems one run got, as the isolation report shows them (from statfs, not from config). */
export interface DiskApplied {
  mechanism: string;
  workspace: QuotaFigures;
  session?: QuotaFigures;
}

/** How often the host looks at a run's quota filesystems to tell the user a limit was reached. */
const SAMPLE_MS = 50;

/** A run's mounted quotas: the report, sampling while it runs, the note for its outcome, the unmount. */
export interface RunDiskQuota {
  applied: DiskApplied;
  /** Start sampling (statfs); returns the stop function. */
  watch(): () => void;
  /** "the disk limit … was reached in the workspace: writes failed with ENOSPC", once per limit and place. */
  notes(): string[];
  /** Which disk limits this run reached (or found full), each once: the structured twin of {@link notes}. */
  limitHits(): ('diskBytes' | 'inodes')[];
  /**
   * Unmount everything this run mounted (idempotent). `keepWorkspace`: the workspace's files are
   * first copied (links as links, special files skipped) onto the host disk at the same path.
   */
  release(options: { keepWorkspace: boolean }): Promise<void>;
}

/**
 * Mount the run's workspace quota on `workspaceRoot` (before anything is created in it) and the
 * session's quota on `sessionFolder`. On any failure, what was mounted is unmounted again. The helper
 * programs run off the event loop (mountQuotaAsync): a run's start does not stall the host's other runs.
 */
export async function mountRunDiskQuota(
  machine: DiskQuotaMachine,
  dataDir: string,
  ids: { runId: string; sessionId: string },
  paths: { workspaceRoot: string; sessionFolder?: string },
  limits: { diskBytes: number; inodes: number },
): Promise<RunDiskQuota> {
  const mounts: QuotaMount[] = [];
  try {
    mounts.push(
      await mountQuotaAsync(
        machine,
        paths.workspaceRoot,
        quotaImage(dataDir, 'workspaces', ids.runId),
        limits,
        'workspace',
      ),
    );
    if (paths.sessionFolder)
      mounts.push(
        await acquireSession(machine, paths.sessionFolder, quotaImage(dataDir, 'sessions', ids.sessionId), limits),
      );
  } catch (error) {
    for (const m of mounts.reverse()) await releaseMount(m);
    throw error;
  }
  return runQuota(machine, mounts);
}

/** A warm slot's workspace quota, mounted now; the session's is added when a run takes the slot. */
export interface SlotDiskQuota {
  /** Mount the session folder's quota and hand both over as the run's (the slot's mount is the run's from now). */
  bind(sessionId: string, sessionFolder: string): Promise<RunDiskQuota>;
  /** Unmount the slot's workspace quota (a slot that served no run). */
  release(): Promise<void>;
}

/**
 * Mount a warm slot's workspace quota on `workspaceRoot` (docs/warm-pool.md): the same image and mount a cold run's
 * workspace gets, named by the slot's id; the session folder's is mounted late, by {@link SlotDiskQuota.bind}.
 */
export async function mountSlotDiskQuota(
  machine: DiskQuotaMachine,
  dataDir: string,
  slotId: string,
  workspaceRoot: string,
  limits: { diskBytes: number; inodes: number },
): Promise<SlotDiskQuota> {
  const image = quotaImage(dataDir, 'workspaces', slotId);
  const workspace = await mountQuotaAsync(machine, workspaceRoot, image, limits, 'workspace');
  return {
    bind: async (sessionId, sessionFolder) =>
      runQuota(machine, [
        workspace,
        await acquireSession(machine, sessionFolder, quotaImage(dataDir, 'sessions', sessionId), limits),
      ]),
    release: () => releaseMount(workspace),
  };
}

/** The run's view of its mounted quotas (workspace first, then the session's when there is one). */
function runQuota(machine: DiskQuotaMachine, mounts: QuotaMount[]): RunDiskQuota {
  let released = false;
  return {
    applied: {
      mechanism: machine.mechanism ?? 'ext4 image on a loop device',
      workspace: mounts[0]!.figures(),
      ...(mounts[1] ? { session: mounts[1].figures() } : {}),
    },
    watch() {
      const timer = setInterval(() => mounts.forEach((m) => m.sample()), SAMPLE_MS);
      timer.unref();
      return () => {
        clearInterval(timer);
        mounts.forEach((m) => m.sample());
      };
    },
    notes() {
      return mounts.flatMap((m) => {
        const r = m.reached();
        const f = m.figures();
        return [
          ...(r.bytes
            ? [
                `the disk limit (diskBytes: ${m.what} of ${f.capacityBytes} bytes) was reached in the ` +
                  `${m.what}: writes past it failed with ENOSPC`,
              ]
            : []),
          ...(r.inodes
            ? [`the file-count limit (inodes: ${f.inodes} in the ${m.what}) was reached: new files failed with ENOSPC`]
            : []),
          ...(r.fullBefore.bytes || r.fullBefore.inodes
            ? [
                `the ${m.what} was full from an earlier run for the whole run (` +
                  `${r.fullBefore.bytes ? `diskBytes: ${f.capacityBytes} bytes` : `inodes: ${f.inodes}`}): ` +
                  `writes failed with ENOSPC`,
              ]
            : []),
        ];
      });
    },
    limitHits() {
      const rs = mounts.map((m) => m.reached());
      return [
        ...(rs.some((r) => r.bytes || r.fullBefore.bytes) ? (['diskBytes'] as const) : []),
        ...(rs.some((r) => r.inodes || r.fullBefore.inodes) ? (['inodes'] as const) : []),
      ];
    },
    async release({ keepWorkspace }) {
      if (released) return;
      released = true;
      for (const m of [...mounts].reverse()) {
        if (keepWorkspace && m.what === 'workspace') keepCopy(m);
        else await releaseMount(m);
      }
    },
  };
}

/**
 * Session folders mounted by this process, with how many of its runs use each: two runs of one
 * session at once (ad-hoc runs; dispatch allows one) share the mount, the last one unmounts it.
 * A run of another host process finds the folder mounted and is refused by `mount` (fail closed).
 * The mount is kept as its promise from the moment it starts: a second run arriving while it is made
 * waits for that one mount rather than starting another (which `mount` would refuse).
 */
const sessionMounts = new Map<string, { mount: Promise<QuotaMount>; made?: QuotaMount; users: number }>();

async function acquireSession(
  machine: DiskQuotaMachine,
  point: string,
  image: string,
  limits: { diskBytes: number; inodes: number },
): Promise<QuotaMount> {
  const held = sessionMounts.get(point);
  if (held) {
    held.users += 1;
    return held.mount;
  }
  const entry: { mount: Promise<QuotaMount>; made?: QuotaMount; users: number } = {
    mount: mountQuotaAsync(machine, point, image, limits, 'session folder'),
    users: 1,
  };
  sessionMounts.set(point, entry);
  entry.mount.then(
    (made) => (entry.made = made),
    // A failed mount is nobody's: the next run of the session tries again.
    () => sessionMounts.get(point) === entry && sessionMounts.delete(point),
  );
  return entry.mount;
}

async function releaseMount(m: QuotaMount): Promise<void> {
  const held = sessionMounts.get(m.point);
  if (held && held.made === m) {
    held.users -= 1;
    if (held.users > 0) return;
    sessionMounts.delete(m.point);
  }
  await m.releaseAsync();
}

/** Longest path a kept copy follows (PATH_MAX is 4096; deeper entries are listed, not copied). */
const KEEP_MAX_PATH = 3800;

/**
 * A kept workspace (`--keep-workspace`): its folders, regular files and links (as links) copied
 * out of the image, then the image dropped. The copy is the host's, so it is bounded like the run
 * was: iterative (any depth, paths past {@link KEEP_MAX_PATH} left out), at most the image's
 * capacity in apparent bytes (a sparse file is not expanded past the quota), owners as in the
 * image (the run's uid, never made root's by the copy), modes without setuid, setgid or sticky
 * bits. What was left out is listed in `KEPT-WORKSPACE-NOTE.txt`.
 */
function keepCopy(m: QuotaMount): void {
  const kept = `${m.point}.kept`;
  const left: string[] = [];
  let budget = m.figures().capacityBytes;
  mkdirSync(kept, { mode: 0o700 });
  const top = lstatSync(m.point);
  lchownSync(kept, top.uid, top.gid);
  const stack: [string, string][] = [[m.point, kept]];
  while (stack.length > 0) {
    const [from, to] = stack.pop()!;
    for (const name of readdirSync(from)) {
      if (from === m.point && name === 'lost+found') continue;
      const src = join(from, name);
      const dst = join(to, name);
      if (dst.length > KEEP_MAX_PATH) {
        left.push(`${src.slice(m.point.length + 1, m.point.length + 201)}…: path too long`);
        continue;
      }
      const st = lstatSync(src);
      if (st.isDirectory()) {
        mkdirSync(dst, { mode: 0o700 });
        lchownSync(dst, st.uid, st.gid);
        chmodSync(dst, st.mode & 0o777);
        stack.push([src, dst]);
      } else if (st.isSymbolicLink()) {
        symlinkSync(readlinkSync(src), dst);
        lchownSync(dst, st.uid, st.gid);
      } else if (st.isFile()) {
        if (st.size > budget) {
          left.push(
            `${src.slice(m.point.length + 1)}: ${st.size} bytes would pass the quota's ` +
              `${m.figures().capacityBytes} bytes`,
          );
          continue;
        }
        budget -= st.size;
        copyFileSync(src, dst);
        lchownSync(dst, st.uid, st.gid);
        chmodSync(dst, st.mode & 0o777);
      }
    }
  }
  if (left.length > 0)
    writeFileSync(join(kept, 'KEPT-WORKSPACE-NOTE.txt'), `Left out of this kept copy:\n${left.join('\n')}\n`);
  m.release();
  rmdirSync(m.point);
  renameSync(kept, m.point);
}

/**
 * The isolation-report lines of a run's quota (or of the configured one where no run exists yet, for `explain` and
 * `doctor`).
 * `sandbox`: the backend's own disk lines (its private /tmp; where it can write beyond the quota).
 */
export function diskQuotaLines(
  limits: { diskBytes: number; inodes: number },
  machine: DiskQuotaMachine,
  sandbox: { privateTmp: string[]; unbounded: string[] },
  applied?: DiskApplied | 'none',
): { enforced: string[]; notEnforced: string[] } {
  const tmp = sandbox.privateTmp;
  const rw = [
    "disk: writes into granted rw mounts (the admin's own folders) are not counted by the quota",
    ...sandbox.unbounded,
  ];
  if (applied && applied !== 'none') {
    const place = (what: string, f: QuotaFigures) => `${what} ≤ ${f.capacityBytes} bytes and ≤ ${f.inodes} files`;
    return {
      enforced: [
        `disk: ${place('workspace', applied.workspace)}` +
          `${applied.session ? `, ${place('session folder', applied.session)}` : ''}` +
          ` (${applied.mechanism}, kernel-enforced: writes past it fail with ENOSPC)`,
        ...tmp,
      ],
      notEnforced: rw,
    };
  }
  if (machine.available && applied !== 'none')
    return {
      enforced: [
        `disk: workspace and session folder each ≤ ${limits.diskBytes} bytes and ≤ about ${limits.inodes} ` +
          `files (${machine.mechanism}, mounted per run; kernel-enforced: writes past it fail with ENOSPC)`,
        ...tmp,
      ],
      notEnforced: rw,
    };
  return {
    enforced: tmp,
    notEnforced: [
      ...rw.slice(1),
      `disk and file-count limits (diskBytes ${limits.diskBytes}, inodes ${limits.inodes}) of the workspace ` +
        `and session folder: ` +
        `${machine.available ? 'not mounted for this run' : `no mechanism on this host (${machine.why})`}`,
    ],
  };
}
