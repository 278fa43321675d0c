import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  closeSync,
  constants,
  fchmodSync,
  fstatSync,
  lchownSync,
  lstatSync,
  openSync,
  readdirSync,
  statSync,
  type Stats,
} from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, sep } from 'node:path';
import { execThroughSpawner } from './helperSpawner.js';
import type { ProbeExec } from './probeSteps.js';
import type { RunIdentity } from './runIdentity.js';
import { dedicatedIdentity, SETPRIV } from './runIdentity.js';

/** A uid/gid pair files are given to. */
type Ids = Pick<RunIdentity, 'uid' | 'gid'>;

/**
 * Give a folder the host made for a run (its workspace, an MCP server's folder) to the run's
 * host identity, recursively; links are re-owned themselves, never followed. Only for trees no
 * runner has touched yet (nothing can swap a directory for a link while this walks).
 */
export function chownTree(root: string, ids: Ids): void {
  const stat = lstatSync(root);
  lchownSync(root, ids.uid, ids.gid);
  if (!stat.isDirectory()) return;
  for (const name of readdirSync(root)) chownTree(join(root, name), ids);
}

/**
 * The session folder belongs to the run identity: made by the host, or kept from runs before
 * this mapping (owned by root then), re-owned once when its top is not the identity's yet (`chown -R`, started by
 * the helper spawner: a run's start does not block the host on it).
 */
async function ownSessionFolder(dir: string, ids: Ids): Promise<void> {
  const step = ownSessionStep(dir, ids);
  if (!step) return;
  const result = await execThroughSpawner(step);
  if (!result.ok) throw new Error(`could not give the session folder to the run identity: ${result.error.stderr}`);
}

/** The `chown -R` that gives `dir` to `ids`, or undefined when its top is theirs already. */
function ownSessionStep(dir: string, ids: Ids): ProbeExec | undefined {
  const stat = lstatSync(dir);
  if (stat.uid === ids.uid && stat.gid === ids.gid) return undefined;
  // chown -R -P walks with openat and never follows a link (coreutils fts, FTS_PHYSICAL).
  return {
    file: '/usr/bin/chown',
    args: ['-R', '-P', `${ids.uid}:${ids.gid}`, '--', dir],
    env: { PATH: '/usr/bin:/bin' },
    timeoutMs: 60_000,
  };
}

/**
 * Why the run identity cannot use a path (undefined: it can). Decided by the kernel: `test` runs
 * as that uid/gid with no groups, so ACLs and every folder above the path count, exactly as for
 * bwrap, which sets the sandbox up as that uid (it must reach every path it binds).
 */
export function identityAccessProblem(path: string, need: 'search' | 'read' | 'write', ids: Ids): string | undefined {
  const check = accessCheck(path, need, ids);
  if (typeof check === 'string') return check;
  try {
    execFileSync(check.step.file, check.step.args, { stdio: 'ignore', env: check.step.env });
    return undefined;
  } catch {
    return check.problem;
  }
}

/** {@link identityAccessProblem} through the helper spawner: a run's start does not block the host on it. */
async function identityAccessProblemAsync(
  path: string,
  need: 'search' | 'read' | 'write',
  ids: Ids,
): Promise<string | undefined> {
  const check = accessCheck(path, need, ids);
  if (typeof check === 'string') return check;
  return (await execThroughSpawner(check.step)).ok ? undefined : check.problem;
}

/** The `test` run as the identity that decides {@link identityAccessProblem}, and what its failure means. */
function accessCheck(
  path: string,
  need: 'search' | 'read' | 'write',
  ids: Ids,
): string | { step: ProbeExec; problem: string } {
  let dir: boolean;
  try {
    dir = statSync(path).isDirectory();
  } catch (error) {
    return `${path}: ${(error as NodeJS.ErrnoException).code}`;
  }
  const tests =
    need === 'search'
      ? ['-x', path]
      : need === 'write'
        ? ['-w', path, '-a', '-x', path]
        : dir
          ? ['-r', path, '-a', '-x', path]
          : ['-r', path];
  const verb = need === 'search' ? 'reach' : need === 'write' ? 'write (and search)' : 'read';
  return {
    step: {
      file: SETPRIV!,
      args: ['--reuid', String(ids.uid), '--regid', String(ids.gid), '--clear-groups', '--', '/usr/bin/test', ...tests],
      env: { PATH: '/usr/bin:/bin' },
      timeoutMs: 30_000,
    },
    problem: `host uid ${ids.uid} gid ${ids.gid} (what runs are on the host) cannot ${verb} ${path}`,
  };
}

/**
 * Let the run identity reach `path` from `base` (the data folder): each folder from `base` down
 * to the path's parent that it cannot search gets group `ids.gid` with group search only (0710
 * style: nothing listable, nothing readable). Folders above `base` are the admin's; they are
 * checked, never changed.
 */
export function reachableBy(ids: Ids, path: string, base: string): void {
  const rel = relative(base, dirname(path));
  if (rel.startsWith('..') || isAbsolute(rel)) throw new Error(`${path} is not under ${base}`);
  let dir = base;
  for (const part of ['', ...(rel ? rel.split(sep) : [])]) {
    dir = part ? join(dir, part) : dir;
    const stat = lstatSync(dir);
    if (!stat.isDirectory()) throw new Error(`${dir} is not a folder`);
    const mode = stat.mode & 0o7777;
    if (stat.uid === ids.uid || mode & 0o001 || (stat.gid === ids.gid && mode & 0o010)) continue;
    lchownSync(dir, stat.uid, ids.gid);
    chmodSync(dir, (mode & ~0o070) | 0o010);
  }
}

/** A file a walk cleared, or left alone and why. */
export interface SetIdFinding {
  path: string;
  cleared: boolean;
  mode: string;
  why?: string;
}

const SETID = 0o6000;
const O_DIR = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const O_FILE = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;

/**
 * Clear setuid/setgid from every regular file under `root` (a run's workspace, session folder or
 * read-write mount source), so nothing a run leaves can gain privileges when run on the host.
 * The walk holds each directory open (`O_NOFOLLOW`) and reaches its entries through
 * `/proc/self/fd/<dir>/<name>`, so a directory swapped for a link mid-walk leads nowhere
 * outside; each file is re-checked on its own descriptor and changed with fchmod. A file with
 * other hard links not owned by `ids` is left alone and reported (it may be a host binary).
 */
export function clearSetIdBits(root: string, ids?: Ids): SetIdFinding[] {
  const findings: SetIdFinding[] = [];
  let top: number;
  try {
    top = openSync(root, O_DIR);
  } catch {
    return findings; // gone, or not a directory: nothing of a run's below it
  }
  // Depth first, holding open only the folders on the current path (not every pending sibling).
  const stack: { fd: number; path: string; names: string[] }[] = [{ fd: top, path: root, names: listed(top) }];
  while (stack.length > 0) {
    const frame = stack.at(-1)!;
    const name = frame.names.pop();
    if (name === undefined) {
      closeSync(frame.fd);
      stack.pop();
      continue;
    }
    const via = `/proc/self/fd/${frame.fd}/${name}`;
    let stat: Stats;
    try {
      stat = lstatSync(via);
    } catch {
      continue;
    }
    if (stat.isDirectory()) {
      let fd: number;
      try {
        fd = openSync(via, O_DIR);
      } catch {
        continue; // swapped or removed meanwhile
      }
      stack.push({ fd, path: join(frame.path, name), names: listed(fd) });
    } else if (stat.isFile() && (stat.mode & SETID) !== 0) findings.push(clearOne(via, join(frame.path, name), ids));
  }
  return findings;
}

/** The names in a held folder (empty when it cannot be read). */
function listed(fd: number): string[] {
  try {
    return readdirSync(`/proc/self/fd/${fd}`);
  } catch {
    return [];
  }
}

function clearOne(via: string, path: string, ids?: Ids): SetIdFinding {
  let fd: number;
  try {
    fd = openSync(via, O_FILE);
  } catch (error) {
    return { path, cleared: false, mode: '?', why: `cannot open: ${(error as NodeJS.ErrnoException).code}` };
  }
  try {
    const stat = fstatSync(fd);
    const mode = (stat.mode & 0o7777).toString(8);
    if (!stat.isFile() || (stat.mode & SETID) === 0) return { path, cleared: false, mode, why: 'changed meanwhile' };
    if (stat.nlink > 1 && (!ids || (stat.uid !== ids.uid && stat.gid !== ids.gid)))
      return {
        path,
        cleared: false,
        mode,
        why: `${stat.nlink} hard links, owned by ${stat.uid}:${stat.gid}: may be a host file`,
      };
    fchmodSync(fd, stat.mode & 0o7777 & ~SETID);
    return { path, cleared: true, mode };
  } finally {
    closeSync(fd);
  }
}

/** Re-exported for existing callers; it lives beside the identity it reads (a backend's `runIdentity`). */
export { dedicatedIdentity };

/**
 * Before a run starts: clear setuid/setgid from what the host copied into the workspace; with a
 * dedicated identity, give it the workspace, the session folder and the run's sockets, and
 * refuse (naming the grant and the uid) a mount or read path it could not use.
 */
export async function giveToRunIdentity(
  ids: RunIdentity | undefined,
  run: {
    dataDir: string;
    workspace: string;
    sessionFolder: string;
    sockets: (string | undefined)[];
    binds: { source: string; target: string; readOnly: boolean }[];
    readPaths: string[];
    bundle?: string;
  },
): Promise<void> {
  clearSetIdBits(run.workspace);
  if (!ids) return;
  // Each check is a helper process (setpriv … test): started by the helper spawner, all at once.
  const checks = await Promise.all([
    // The data folder itself is made reachable below; the folders above it are the admin's.
    identityAccessProblemAsync(dirname(run.dataDir), 'search', ids).then((p) => [
      'the folder above the data folder',
      p,
    ]),
    ...run.binds.map((b) =>
      identityAccessProblemAsync(b.source, b.readOnly ? 'read' : 'write', ids).then((p) => [
        `mount ${basename(b.target)} (${b.readOnly ? 'ro' : 'rw'})`,
        p,
      ]),
    ),
    ...run.readPaths.map((path) => identityAccessProblemAsync(path, 'read', ids).then((p) => [`read path ${path}`, p])),
  ]);
  const problems = checks.filter(([, problem]) => problem !== undefined);
  if (problems.length > 0) {
    throw new Error(
      `${problems.map(([what, problem]) => `${what}: ${problem}`).join('; ')}. Grant it to that uid (chown, ` +
        `setfacl -m u:${ids.uid}:rwX, or a group with gid ${ids.gid}; docs/admin-guide.md "Run identity")`,
    );
  }
  const sockets = run.sockets.filter((s): s is string => s !== undefined);
  // The run's bundle (in <data>/bundles, 0700) must be reachable too: bwrap resolves every bind as the run uid.
  for (const path of [run.workspace, run.sessionFolder, ...sockets, ...(run.bundle ? [run.bundle] : [])])
    reachableBy(ids, path, run.dataDir);
  chownTree(run.workspace, ids);
  await ownSessionFolder(run.sessionFolder, ids);
  for (const socket of sockets) lchownSync(socket, ids.uid, ids.gid);
}

/** After a run: clear setuid/setgid under each folder it could write; the cleared and skipped files. */
export function clearRunSetIdBits(roots: string[], ids?: Ids): SetIdFinding[] {
  return roots.flatMap((root) => clearSetIdBits(root, ids));
}
