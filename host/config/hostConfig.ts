import { readFileSync } from 'node:fs';
import type { HostLimits } from './limits.js';

/** The configuration the host runs with (the YAML config file arrives with bindings). */
export interface HostConfig {
  dataDir: string;
  limits: HostLimits;
  /** Extra folders searched for runners by name, after the built-in ones. */
  runnerDirs: string[];
  logLevel: string;
  /** Keep run workspaces after the run (default: removed). */
  keepWorkspaces: boolean;
}

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

/** How the host names itself in `initialize`. */
export const HOST_INFO = { name: 'paddock', version: pkg.version } as const;
