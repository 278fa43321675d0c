import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const UMOUNT = ['/usr/bin/umount', '/bin/umount'].find((p) => existsSync(p));

/** A mount point from /proc/self/mountinfo (field 5), with its octal escapes (`\040`) decoded. */
function mountPoints(): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split(' ')[4]!.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8))));
}

/**
 * At host start, before the retention sweeps: unmount quota filesystems a stopped host left on
 * `<data>/workspaces/<runId>` or `<data>/sessions/<sessionId>` (nothing else), except those of
 * runs and sessions still live. Returns the unmounted paths.
 */
export function unmountLeftoverQuotas(
  dataDir: string,
  live: { runs: ReadonlySet<string>; sessions: ReadonlySet<string> },
): string[] {
  if (!UMOUNT || !existsSync(dataDir)) return [];
  const root = realpathSync(dataDir);
  const done: string[] = [];
  for (const point of mountPoints()) {
    const match = /^(workspaces|sessions)\/([^/]+)$/.exec(
      point.startsWith(`${root}/`) ? point.slice(root.length + 1) : '',
    );
    if (!match) continue;
    if ((match[1] === 'workspaces' ? live.runs : live.sessions).has(match[2]!)) continue;
    unmountPoint(point);
    done.push(point);
  }
  return done;
}

/**
 * The quota filesystems of runs recovery just interrupted (their host process died holding them
 * mounted): unmounted, so the session's next run — in any process — can mount its folder again.
 */
export function unmountQuotasOf(dataDir: string, runs: readonly { runId: string; sessionId: string }[]): string[] {
  if (!UMOUNT || runs.length === 0 || !existsSync(dataDir)) return [];
  const root = realpathSync(dataDir);
  const wanted = new Set(runs.flatMap((r) => [`${root}/workspaces/${r.runId}`, `${root}/sessions/${r.sessionId}`]));
  const done = mountPoints().filter((point) => wanted.has(point));
  for (const point of done) unmountPoint(point);
  return done;
}

function unmountPoint(point: string): void {
  const env = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' };
  try {
    execFileSync(UMOUNT!, [point], { env, stdio: 'pipe' });
  } catch {
    try {
      execFileSync(UMOUNT!, ['-l', point], { env, stdio: 'pipe' });
    } catch (error) {
      // Another host process on this data folder unmounted it first (the run's own host releasing it as this one
      // sweeps: CI saw `umount: … not mounted`): gone is what was wanted.
      if (!mountPoints().includes(point)) return;
      throw error;
    }
  }
}

/**
 * After the retention sweeps: delete workspace images of runs that are over, and session images
 * whose session folder was removed (their session expired). Returns the removed image names.
 */
export function removeOrphanQuotaImages(
  dataDir: string,
  live: { runs: ReadonlySet<string>; sessions: ReadonlySet<string> },
): string[] {
  const removed: string[] = [];
  for (const kind of ['workspaces', 'sessions'] as const) {
    const dir = join(dataDir, 'quota', kind);
    if (!existsSync(dir)) continue;
    for (const name of readdirSync(dir)) {
      const id = name.replace(/\.img$/, '');
      const keep =
        kind === 'workspaces' ? live.runs.has(id) : live.sessions.has(id) || existsSync(join(dataDir, 'sessions', id));
      if (keep) continue;
      rmSync(join(dir, name), { force: true });
      removed.push(name);
    }
  }
  return removed;
}
