// The fuzz runner's process: a small C bridge (bridge.c) between the host's pipes and the player's socket.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Compile the bridge into `dir` with the system C compiler (`cc`); returns the binary's path. */
export function buildBridge(dir: string): string {
  const binary = join(dir, 'fuzz-bridge');
  const source = fileURLToPath(new URL('./bridge.c', import.meta.url));
  execFileSync('cc', ['-O2', '-Wall', '-Werror', '-o', binary, source], { stdio: ['ignore', 'ignore', 'inherit'] });
  return binary;
}

/** The runner command that bridges to the player listening on `socketPath`. */
export function bridgeCommand(bridge: string, socketPath: string): { command: string; args: string[] } {
  return { command: bridge, args: [socketPath] };
}
