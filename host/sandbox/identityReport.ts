import { dirname } from 'node:path';
import { PACKAGE_ROOT } from '../config/packageRoot.js';
import { identityAccessProblem } from './runIdentityFiles.js';
import { identityWarnings, type RunIdentity, type RunIdentityError } from './runIdentity.js';

/** What `paddock doctor` says about the host identity of sandboxed runs. */
export interface RunIdentityReport {
  /** False when runs are refused (no usable identity) or get a privileged one. */
  ok: boolean;
  summary: string;
  warnings: string[];
  identity?: RunIdentity;
}

/**
 * The run identity as doctor reports it: the host uid/gid the sandbox's 65534 is, how, and a
 * warning for each way it is privileged or cannot reach what every run needs (the folder holding
 * the data folder, this package: bwrap sets the sandbox up as that uid).
 */
export function runIdentityReport(identity: RunIdentity | RunIdentityError, dataDir: string): RunIdentityReport {
  if ('error' in identity) return { ok: false, summary: `— ${identity.error}; bwrap runs are refused`, warnings: [] };
  const how =
    identity.mechanism === 'dedicated'
      ? `dedicated: a user namespace paddock makes; the id is ` +
        `${identity.source === 'default' ? 'the default' : `from ${identity.source}`}`
      : 'bwrap maps it to the user running paddock';
  const warnings = identityWarnings(identity).map((w) => `runs get a privileged host identity: ${w}`);
  if (identity.mechanism === 'dedicated') {
    for (const [path, need] of [
      [dirname(dataDir), 'search'],
      [PACKAGE_ROOT, 'read'],
    ] as const) {
      const problem = identityAccessProblem(path, need, identity);
      if (problem) warnings.push(`${problem}: bwrap runs will fail (docs/admin-guide.md "Run identity")`);
    }
  }
  return {
    ok: warnings.length === 0,
    summary: `uid/gid 65534 in the sandbox is host uid ${identity.uid} gid ${identity.gid} (${how})`,
    warnings,
    identity,
  };
}
