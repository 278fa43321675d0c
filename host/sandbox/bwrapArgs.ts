import { existsSync, lstatSync, readlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { SandboxRequest } from './backend.js';

/** Where the egress socket appears inside the sandbox, and the local port the bridge listens on. */
export const EGRESS = { socket: '/run/paddock/egress.sock', port: 3128 } as const;
/** The runner's stdout FIFO: its host end beside the workspace, and where the runner's exec opens it in the sandbox. */
export const STDOUT_FIFO = { target: '/paddock-stdout', source: (workspace: string) => `${workspace}.stdout` } as const;
/** Where the run's gateway socket appears inside the sandbox, and the local port its bridge listens on. */
export const GATEWAY = { socket: '/run/paddock/gateway.sock', port: 3129 } as const;

/** System paths bound read-only under bwrap: enough to run node, python and shells, nothing personal. */
const SYSTEM_RO = [
  '/usr',
  '/etc/ld.so.cache',
  '/etc/ld.so.conf',
  '/etc/ld.so.conf.d',
  '/etc/alternatives',
  '/etc/ssl',
  '/etc/ca-certificates',
  '/etc/localtime',
  '/etc/nsswitch.conf',
  '/etc/passwd',
  '/etc/group',
];

/** Read-only binds (and the usual /bin → usr/bin links) of the system a runner needs. */
export function systemArgs(): string[] {
  const args: string[] = [];
  for (const top of ['/bin', '/sbin', '/lib', '/lib64', '/lib32']) {
    if (!existsSync(top)) continue;
    const stat = lstatSync(top);
    if (stat.isSymbolicLink()) args.push('--symlink', readlinkSync(top), top);
    else args.push('--ro-bind', top, top);
  }
  for (const path of SYSTEM_RO) args.push('--ro-bind-try', path, path);
  // A node outside /usr (nvm, /opt) must be visible too.
  const nodeDir = dirname(process.execPath);
  if (!nodeDir.startsWith('/usr/')) args.push('--ro-bind', dirname(nodeDir), dirname(nodeDir));
  return args;
}

/**
 * The namespaces and identity of a sandbox: uid/gid 65534 in a user namespace, either bwrap's own
 * (mapped to the invoking user) or, with `usernsFd`, the host's run namespace (65534 → the
 * dedicated run uid, host/sandbox/runIdentity.ts). `--unshare-all` would imply a user namespace
 * of bwrap's own, so with `usernsFd` the others are listed one by one.
 */
export function namespaceArgs(usernsFd?: number): string[] {
  const identity = ['--uid', '65534', '--gid', '65534'];
  if (usernsFd === undefined) return ['--unshare-all', '--unshare-user', ...identity];
  return [
    '--userns',
    String(usernsFd),
    '--unshare-ipc',
    '--unshare-pid',
    '--unshare-net',
    '--unshare-uts',
    '--unshare-cgroup-try',
    ...identity,
  ];
}

/**
 * bwrap's options for a run (docs/security-model.md, "bwrap backend"), without the command:
 * the launch passes them through `--args FD`, so the runner's environment (its run token) is
 * never in a host-visible command line. Also the source of `paddock explain`'s bind lists.
 * `usernsFd`: the host's run user namespace (a root host, host/sandbox/runIdentity.ts).
 */
export function bwrapOptions(request: SandboxRequest, usernsFd?: number): string[] {
  const { launch } = request;
  const args = [
    ...namespaceArgs(usernsFd),
    '--die-with-parent',
    '--new-session',
    '--cap-drop',
    'ALL',
    '--hostname',
    'paddock',
    ...systemArgs(),
    '--proc',
    '/proc',
    // The private /tmp and /dev/shm are bounded like the workspace (tmpfs size; their pages count
    // against the run's memory cgroup); the rest of bwrap's /dev tmpfs is read-only (device nodes still work).
    '--dev',
    '/dev',
    '--size',
    String(request.limits.diskBytes),
    '--tmpfs',
    '/dev/shm',
    '--remount-ro',
    '/dev',
    '--size',
    String(request.limits.diskBytes),
    '--tmpfs',
    '/tmp',
  ];
  for (const path of request.readOnly) args.push('--ro-bind', path, path);
  args.push('--bind', request.workspace, request.workspace);
  for (const b of request.binds) {
    args.push(b.readOnly ? '--ro-bind' : '--bind', b.source, b.target);
    // A writable repository still never gets writable git hooks or config (they run on the host's git).
    if (!b.readOnly)
      for (const sub of ['.git/hooks', '.git/config'])
        if (existsSync(join(b.source, sub))) args.push('--ro-bind', join(b.source, sub), join(b.target, sub));
  }
  if (request.stdoutFifo) args.push('--bind', STDOUT_FIFO.source(request.workspace), STDOUT_FIFO.target);
  if (request.egressSocket) args.push('--bind', request.egressSocket, EGRESS.socket);
  if (request.gatewaySocket) args.push('--bind', request.gatewaySocket, GATEWAY.socket);
  // The sandbox's own root (a tmpfs holding the mount points) becomes read-only too.
  args.push('--remount-ro', '/', '--chdir', launch.cwd, '--clearenv');
  for (const [k, v] of Object.entries(launch.env)) args.push('--setenv', k, v);
  return args;
}

/** One filesystem entry a bwrap option list makes visible inside the sandbox. */
export interface SandboxBind {
  /** Host path (or, for a link, its target as written). */
  source: string;
  /** Path inside the sandbox. */
  target: string;
  /** `own`: made by bwrap itself (`--proc`, `--dev`, `--tmpfs`), nothing of the host's. */
  mode: 'ro' | 'rw' | 'link' | 'own';
  /** `--ro-bind-try`: bound only if the source exists. */
  optional: boolean;
}

/** How many values each bwrap option this host uses takes (bindsOf refuses any other option). */
const ARITY: Record<string, number> = {
  '--unshare-all': 0,
  '--share-net': 0,
  '--unshare-user': 0,
  '--unshare-ipc': 0,
  '--unshare-pid': 0,
  '--unshare-net': 0,
  '--unshare-uts': 0,
  '--unshare-cgroup-try': 0,
  '--userns': 1,
  '--die-with-parent': 0,
  '--new-session': 0,
  '--clearenv': 0,
  '--as-pid-1': 0,
  '--cap-drop': 1,
  '--cap-add': 1,
  '--uid': 1,
  '--gid': 1,
  '--hostname': 1,
  '--proc': 1,
  '--dev': 1,
  '--tmpfs': 1,
  '--remount-ro': 1,
  '--chdir': 1,
  '--unsetenv': 1,
  '--dir': 1,
  '--perms': 1,
  '--size': 1,
  '--setenv': 2,
  '--ro-bind': 2,
  '--ro-bind-try': 2,
  '--bind': 2,
  '--bind-try': 2,
  '--dev-bind': 2,
  '--dev-bind-try': 2,
  '--symlink': 2,
  '--chmod': 2,
};
const BIND_MODES: Record<string, [SandboxBind['mode'], boolean]> = {
  '--ro-bind': ['ro', false],
  '--ro-bind-try': ['ro', true],
  '--bind': ['rw', false],
  '--bind-try': ['rw', true],
  '--dev-bind': ['rw', false],
  '--dev-bind-try': ['rw', true],
  '--symlink': ['link', false],
};

/**
 * Every bind and link in a bwrap option list, in order, read from the options themselves (what
 * `explain` prints). Walks option by option with each one's arity, so a value that looks like an
 * option (an env value `--bind`) is never mistaken for one; an unknown option is an error.
 */
export function bindsOf(options: readonly string[]): SandboxBind[] {
  const binds: SandboxBind[] = [];
  for (let i = 0; i < options.length;) {
    const option = options[i]!;
    const arity = ARITY[option];
    if (arity === undefined) throw new Error(`bindsOf: unknown bwrap option ${option}`);
    const mode = BIND_MODES[option];
    if (mode) binds.push({ source: options[i + 1]!, target: options[i + 2]!, mode: mode[0], optional: mode[1] });
    else if (option === '--proc' || option === '--dev' || option === '--tmpfs')
      binds.push({ source: option.slice(2), target: options[i + 1]!, mode: 'own', optional: false });
    i += 1 + arity;
  }
  return binds;
}
