import { existsSync, lstatSync, readlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { SandboxRequest } from './prepare.js';

/** Where the egress socket appears inside the sandbox, and the local port the bridge listens on. */
export const EGRESS = { socket: '/run/paddock/egress.sock', port: 3128 } as const;
/** Where the run's gateway socket appears inside the sandbox, and the local port its bridge listens on. */
export const GATEWAY = { socket: '/run/paddock/gateway.sock', port: 3129 } as const;

/** System paths bound read-only under bwrap: enough to run node, python and shells, nothing personal. */
const SYSTEM_RO = ['/usr', '/etc/ld.so.cache', '/etc/ld.so.conf', '/etc/ld.so.conf.d', '/etc/alternatives', '/etc/ssl', '/etc/ca-certificates', '/etc/localtime', '/etc/nsswitch.conf', '/etc/passwd', '/etc/group'];

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

/** The bwrap command line around `inner` (docs/security-model.md, "bwrap backend"). */
export function bwrapArgs(request: SandboxRequest, inner: string[]): string[] {
  const { launch } = request;
  const args = [
    '--unshare-all',
    '--die-with-parent',
    '--new-session',
    '--cap-drop', 'ALL',
    '--unshare-user', '--uid', '65534', '--gid', '65534',
    '--hostname', 'paddock',
    ...systemArgs(),
    '--proc', '/proc',
    // The private /tmp and /dev/shm are bounded like the workspace (tmpfs size; their pages count
    // against the run's memory cgroup); the rest of bwrap's /dev tmpfs is read-only (device nodes still work).
    '--dev', '/dev',
    '--size', String(request.limits.diskBytes), '--tmpfs', '/dev/shm',
    '--remount-ro', '/dev',
    '--size', String(request.limits.diskBytes), '--tmpfs', '/tmp',
  ];
  for (const path of request.readOnly) args.push('--ro-bind', path, path);
  args.push('--bind', request.workspace, request.workspace);
  for (const b of request.binds) {
    args.push(b.readOnly ? '--ro-bind' : '--bind', b.source, b.target);
    // A writable repository still never gets writable git hooks or config (they run on the host's git).
    if (!b.readOnly) for (const sub of ['.git/hooks', '.git/config']) if (existsSync(join(b.source, sub))) args.push('--ro-bind', join(b.source, sub), join(b.target, sub));
  }
  if (request.egressSocket) args.push('--bind', request.egressSocket, EGRESS.socket);
  if (request.gatewaySocket) args.push('--bind', request.gatewaySocket, GATEWAY.socket);
  // The sandbox's own root (a tmpfs holding the mount points) becomes read-only too.
  args.push('--remount-ro', '/', '--chdir', launch.cwd, '--clearenv');
  for (const [k, v] of Object.entries(launch.env)) args.push('--setenv', k, v);
  return [...args, '--', ...inner];
}

