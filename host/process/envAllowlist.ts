/** Host variables a runner inherits: locale and PATH only. Everything else is opt-in. */
export const INHERITED_ENV = ['PATH', 'LANG', 'LANGUAGE', 'LC_ALL', 'LC_CTYPE', 'TZ'] as const;

/** Variables the host sets itself; a manifest or binding cannot override them. */
export const HOST_SET_ENV = ['HOME', 'TMPDIR', 'PADDOCK_RUN_ID'] as const;

/**
 * Variables never passed to a runner even if asked for: `CLAUDECODE` makes a nested Claude Code
 * refuse to start, and the loader variables would let a manifest inject code into the harnesses it
 * launches.
 */
export const FORBIDDEN_ENV = ['CLAUDECODE', 'LD_PRELOAD', 'LD_LIBRARY_PATH', 'LD_AUDIT', 'NODE_OPTIONS'] as const;

/** Inputs to {@link buildRunnerEnv}. */
export interface RunnerEnvSpec {
  /** The host's environment; only {@link INHERITED_ENV} is read from it. */
  hostEnv: NodeJS.ProcessEnv;
  home: string;
  tmpDir: string;
  runId: string;
  /** Literal, non-secret variables from the runner manifest. */
  extra?: Record<string, string>;
}

/**
 * Build a runner's environment from an allowlist. Never a copy of the host environment: the
 * host's provider keys and tokens must not reach a runner (docs/security-model.md).
 */
export function buildRunnerEnv(spec: RunnerEnvSpec): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of INHERITED_ENV) {
    const value = spec.hostEnv[name];
    if (value !== undefined) env[name] = value;
  }
  for (const [name, value] of Object.entries(spec.extra ?? {})) {
    if ((HOST_SET_ENV as readonly string[]).includes(name) || (FORBIDDEN_ENV as readonly string[]).includes(name)) continue;
    env[name] = value;
  }
  env.HOME = spec.home;
  env.TMPDIR = spec.tmpDir;
  env.PADDOCK_RUN_ID = spec.runId;
  return env;
}
