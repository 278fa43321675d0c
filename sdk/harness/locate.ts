import { accessSync, constants, existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** Where a harness CLI lives inside the project-local install (`scripts/install-harnesses.sh`). */
const INSTALLED: Record<'claude' | 'codex', string[]> = {
  claude: ['node_modules', '@anthropic-ai', 'claude-code', 'bin', 'claude.exe'],
  codex: ['node_modules', '@openai', 'codex', 'bin', 'codex.js'],
};

/** A harness CLI found on this machine: what to run (a JS launcher runs under node). */
export interface LocatedHarness {
  command: string;
  /** Arguments before the CLI's own (the launcher script for a JS entry). */
  prefix: string[];
  /** Where it was found. */
  path: string;
}

/**
 * Find a pinned harness CLI: in `PADDOCK_HARNESS_DIR` (the host sets it to its `.harness/`
 * folder and binds it read-only into the sandbox), else on `PATH`. Undefined when absent.
 */
export function locateHarness(
  name: 'claude' | 'codex',
  env: NodeJS.ProcessEnv = process.env,
): LocatedHarness | undefined {
  const dir = env.PADDOCK_HARNESS_DIR;
  if (dir) {
    const path = join(dir, ...INSTALLED[name]);
    if (existsSync(path))
      return path.endsWith('.js')
        ? { command: process.execPath, prefix: [path], path }
        : { command: path, prefix: [], path };
  }
  for (const folder of (env.PATH ?? '').split(delimiter)) {
    if (!folder) continue;
    const path = join(folder, name);
    try {
      accessSync(path, constants.X_OK);
      return { command: path, prefix: [], path };
    } catch {
      /* not here */
    }
  }
  return undefined;
}
