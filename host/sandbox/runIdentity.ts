import { existsSync, fstatSync, openSync, readFileSync, statSync, writeFileSync, closeSync } from 'node:fs';
import { exec, runProbeSync, type Probe } from './probeSteps.js';

/** The uid and gid a sandboxed runner has inside its user namespace (docs/security-model.md). */
export const SANDBOX_ID = 65534;

/**
 * Host id runs map to when paddock runs as root and neither PADDOCK_RUN_UID nor root's
 * /etc/subuid range names one: above every range useradd (≤ 60000) and systemd (≤ 1879048191,
 * its container range) hand out, below the foreign-id range systemd reserves at 2147352576.
 */
export const DEFAULT_RUN_ID = 2_000_000_000;

/** The host identity a sandboxed run's uid/gid 65534 is, and the mechanism that makes it so. */
export interface RunIdentity {
  uid: number;
  gid: number;
  /**
   * `dedicated`: the host (root) makes a user namespace mapping 65534 → uid/gid and bwrap joins
   * it (`--userns`); `invoking-user`: paddock runs unprivileged and bwrap maps 65534 to that user.
   */
  mechanism: 'dedicated' | 'invoking-user';
  /** Where uid/gid came from (an env variable, /etc/subuid, the default, the host process). */
  source: string;
}

/** A run identity that cannot be used, and why (runs under bwrap are refused). */
export interface RunIdentityError {
  error: string;
}

/** The identity files must be given to: only a dedicated one (an unprivileged host already owns what it makes). */
export function dedicatedIdentity(identity: RunIdentity | RunIdentityError): RunIdentity | undefined {
  return 'error' in identity || identity.mechanism !== 'dedicated' ? undefined : identity;
}

/** The first id of `user`'s range in an /etc/subuid-style text, if any. */
export function firstSubordinateId(text: string, user: string, uid: number): number | undefined {
  for (const line of text.split('\n')) {
    const [name, start, count] = line.trim().split(':');
    if ((name === user || name === String(uid)) && /^\d+$/.test(start ?? '') && Number(count) > 0) return Number(start);
  }
  return undefined;
}

function parseId(raw: string, name: string): number | RunIdentityError {
  if (!/^\d{1,10}$/.test(raw)) return { error: `${name}=${JSON.stringify(raw)} is not a numeric id` };
  const id = Number(raw);
  if (id === 0) return { error: `${name}=0 would map runs to root; pick an unprivileged id` };
  if (id >= 4294967295 || id === 65535) return { error: `${name}=${id} is not a usable id` };
  return id;
}

/**
 * Which host uid/gid sandboxed runs get: for a root host, PADDOCK_RUN_UID/PADDOCK_RUN_GID, else
 * the first id of root's /etc/subuid (/etc/subgid) range, else {@link DEFAULT_RUN_ID}; never 0.
 * For an unprivileged host, the host user itself (bwrap's own mapping).
 */
export function resolveRunIdentity(
  env: NodeJS.ProcessEnv = process.env,
  host: { uid: number; gid: number } = { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 },
  read: (path: string) => string = (path) => (existsSync(path) ? readFileSync(path, 'utf8') : ''),
): RunIdentity | RunIdentityError {
  if (host.uid !== 0)
    return {
      uid: host.uid,
      gid: host.gid,
      mechanism: 'invoking-user',
      source: 'the user running paddock (bwrap maps 65534 to it)',
    };
  const pick = (variable: string, file: string): { id: number; source: string } | RunIdentityError => {
    const raw = env[variable];
    if (raw !== undefined && raw !== '') {
      const id = parseId(raw, variable);
      return typeof id === 'number' ? { id, source: variable } : id;
    }
    const sub = firstSubordinateId(read(file), 'root', 0);
    return sub !== undefined && sub !== 0
      ? { id: sub, source: `first id of root's range in ${file}` }
      : { id: DEFAULT_RUN_ID, source: 'default' };
  };
  const uid = pick('PADDOCK_RUN_UID', '/etc/subuid');
  if ('error' in uid) return uid;
  // Without its own setting the gid follows the uid's choice (same id, same source).
  const gid = env.PADDOCK_RUN_GID ? pick('PADDOCK_RUN_GID', '/etc/subgid') : { id: uid.id, source: uid.source };
  if ('error' in gid) return gid;
  return {
    uid: uid.id,
    gid: gid.id,
    mechanism: 'dedicated',
    source: uid.source === gid.source ? uid.source : `${uid.source} / ${gid.source}`,
  };
}

/** Groups whose members can become root or read what root can (a run mapped into one is privileged). */
const PRIVILEGED_GROUPS = new Set([
  'root',
  'sudo',
  'wheel',
  'admin',
  'adm',
  'disk',
  'docker',
  'lxd',
  'shadow',
  'kvm',
  'systemd-journal',
]);

/**
 * Why this identity gives runs a privileged host identity (empty: it does not). Reads the host's
 * account files: uid or gid 0, a uid that is a named account in a privileged group, or a gid that
 * is one of those groups.
 */
export function privilegedIdentityWarnings(
  identity: Pick<RunIdentity, 'uid' | 'gid'>,
  passwd: string,
  group: string,
): string[] {
  const warnings: string[] = [];
  if (identity.uid === 0)
    warnings.push(
      'runs map to host uid 0 (root): a file a run writes in a read-write mount is owned by root on the host',
    );
  if (identity.gid === 0) warnings.push('runs map to host gid 0 (root group)');
  const user = passwd
    .split('\n')
    .map((l) => l.split(':'))
    .find((f) => f.length >= 4 && Number(f[2]) === identity.uid && f[2] !== '');
  const groups = group
    .split('\n')
    .map((l) => l.split(':'))
    .filter((f) => f.length >= 4);
  for (const [name, , gid, members] of groups) {
    if (!name || !PRIVILEGED_GROUPS.has(name)) continue;
    if (Number(gid) === identity.gid && identity.gid !== 0)
      warnings.push(`runs map to host gid ${identity.gid}, the "${name}" group`);
    if (user && (members ?? '').split(',').includes(user[0]!))
      warnings.push(`runs map to host user "${user[0]}" (uid ${identity.uid}), a member of the "${name}" group`);
    if (user && Number(user[3]) === Number(gid) && Number(gid) !== 0)
      warnings.push(`runs map to host user "${user[0]}" (uid ${identity.uid}), whose primary group is "${name}"`);
  }
  return warnings;
}

/** {@link privilegedIdentityWarnings} against this host's /etc/passwd and /etc/group. */
export function identityWarnings(identity: Pick<RunIdentity, 'uid' | 'gid'>): string[] {
  const read = (path: string) => (existsSync(path) ? readFileSync(path, 'utf8') : '');
  return privilegedIdentityWarnings(identity, read('/etc/passwd'), read('/etc/group'));
}

/** Host paths of the helpers (never looked up through a PATH). */
const UNSHARE = ['/usr/bin/unshare', '/bin/unshare'].find((p) => existsSync(p));
/** setpriv drops the host's supplementary groups before bwrap: a joined namespace keeps them otherwise. */
export const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p));

let held: { uid: number; gid: number; path: string } | undefined;

/**
 * A user namespace mapping only 65534 → `uid`/`gid`, made once per host process and held by an
 * open descriptor; returns the path a launcher opens it by (`/proc/<host pid>/fd/<n>`). The
 * namespace is made by a short-lived `unshare --user` holder whose maps the host (root) writes
 * itself, then the holder is killed: nothing stays running.
 */
export function dedicatedUserns(identity: Pick<RunIdentity, 'uid' | 'gid'>): string {
  return runProbeSync(dedicatedUsernsSteps(identity));
}

/** {@link dedicatedUserns} as probe steps (probeSteps.ts): the machine probe runs it without blocking. */
export function* dedicatedUsernsSteps(identity: Pick<RunIdentity, 'uid' | 'gid'>): Probe<string> {
  if (held && held.uid === identity.uid && held.gid === identity.gid) return held.path;
  if (!UNSHARE || !SETPRIV)
    throw new Error(
      'util-linux unshare and setpriv are needed to map runs to a dedicated host uid (apt-get install util-linux)',
    );
  const out = yield* exec(
    UNSHARE,
    ['--user', '--', '/bin/sh', '-c', '/bin/sleep infinity </dev/null >/dev/null 2>&1 & echo $!'],
    { PATH: '/usr/bin:/bin' },
  );
  const pid = Number(out.trim());
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`unshare --user gave no holder pid (${JSON.stringify(out)})`);
  // While the holder was being made (asynchronously), another caller of this process may have made and
  // kept one: keep that one (its descriptor may already be handed to a launch) and drop ours.
  const kept = held && held.uid === identity.uid && held.gid === identity.gid ? held.path : undefined;
  let fd: number | undefined;
  try {
    if (kept !== undefined) return kept;
    fd = openSync(`/proc/${pid}/ns/user`, 'r');
    // Never hand out the host's own namespace (a reused pid would be the only way to get it).
    if (fstatSync(fd).ino === statSync('/proc/self/ns/user').ino)
      throw new Error('the holder is not in a new user namespace');
    writeFileSync(`/proc/${pid}/uid_map`, `${SANDBOX_ID} ${identity.uid} 1\n`);
    writeFileSync(`/proc/${pid}/gid_map`, `${SANDBOX_ID} ${identity.gid} 1\n`);
    if (statSync(`/proc/${pid}/ns/user`).ino !== fstatSync(fd).ino)
      throw new Error('the holder changed while its maps were written');
  } catch (error) {
    if (fd !== undefined) closeSync(fd);
    throw new Error(
      `cannot make the run user namespace (65534 → ${identity.uid}:${identity.gid}): ${(error as Error).message}`,
    );
  } finally {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  if (held) closeSync(Number(held.path.split('/').pop()));
  held = { ...identity, path: `/proc/${process.pid}/fd/${fd}` };
  return held.path;
}

/** The descriptor number bwrap reads the run user namespace from (`--userns`). */
export const USERNS_FD = 9;

/**
 * The launcher prefix that opens the run user namespace as fd {@link USERNS_FD} for bwrap, with
 * the host's supplementary groups cleared (they would otherwise stay with the sandbox).
 */
export function usernsPrefix(nsPath: string): string[] {
  return [
    SETPRIV!,
    '--clear-groups',
    '--',
    '/bin/sh',
    '-c',
    `exec ${USERNS_FD}<"$1" || exit 96; shift; exec "$@"`,
    'paddock-userns',
    nsPath,
  ];
}
