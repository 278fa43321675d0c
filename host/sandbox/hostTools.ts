import { existsSync } from 'node:fs';

/**
 * The only environment a host-side helper (the launch shell, prlimit, bwrap, the env loader)
 * ever gets: a fixed PATH of root-owned system directories and a fixed locale. Nothing from a
 * runner manifest, a binding or the runner's environment reaches a helper.
 */
export const HOST_HELPER_ENV: Readonly<Record<string, string>> = Object.freeze({
  PATH: '/usr/sbin:/usr/bin:/sbin:/bin',
  LANG: 'C.UTF-8',
});

const SYSTEM_DIRS = ['/usr/bin', '/bin', '/usr/sbin', '/sbin', '/usr/local/bin'];

/** The absolute path of a host tool in the system directories (never through a PATH lookup), or undefined. */
export function hostTool(binary: string): string | undefined {
  for (const dir of SYSTEM_DIRS) if (existsSync(`${dir}/${binary}`)) return `${dir}/${binary}`;
  return undefined;
}

/** Like {@link hostTool}, but a missing tool is an error naming it. */
export function requireHostTool(binary: string): string {
  const path = hostTool(binary);
  if (!path) throw new Error(`host tool ${binary} is not installed in ${SYSTEM_DIRS.join(', ')}`);
  return path;
}
