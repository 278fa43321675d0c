/** Host variables a runner inherits: locale and PATH only. Everything else is opt-in. */
export const INHERITED_ENV = ['PATH', 'LANG', 'LANGUAGE', 'LC_ALL', 'LC_CTYPE', 'TZ'] as const;

/** Variables the host sets itself; a manifest or binding cannot override them. */
export const HOST_SET_ENV = ['HOME', 'TMPDIR', 'PADDOCK_RUN_ID'] as const;

/**
 * Names no runner package may set, whatever its namespace: anything a loader, an interpreter, a
 * shell, a proxy-aware client or paddock itself reads (`CLAUDECODE` makes a nested Claude Code
 * refuse to start). The allowlist below is the rule; this list is the floor under it, so a runner
 * id like `ld` or `node` cannot open `LD_*` or `NODE_*` through its own prefix.
 */
const REFUSED_ENV: readonly RegExp[] = [
  /^(PATH|ENV|BASH_ENV|CDPATH|IFS|PS4|SHELLOPTS|BASHOPTS|GLOBIGNORE)$/,
  /^(HOME|TMPDIR|TMP|TEMP|SHELL|USER|LOGNAME|CLAUDECODE)$/,
  /^LD_/,
  /_PRELOAD$/,
  /^DYLD_/,
  /^NODE_/,
  /^NPM_/,
  /^PYTHON/,
  /^PERL/,
  /^RUBY/,
  /^GEM_/,
  /^BUNDLE_/,
  /^JAVA_/,
  /^_JAVA_/,
  /^JDK_/,
  /^GCONV_PATH$/,
  /^LOCPATH$/,
  /^NLSPATH$/,
  /^HOSTALIASES$/,
  /^RES_OPTIONS$/,
  /^LOCALDOMAIN$/,
  /^MALLOC_/,
  /^GLIBC_/,
  /^GMON_/,
  /^LC_/,
  /^LANG(UAGE)?$/,
  /^TZ(DIR)?$/,
  /^SSL_/,
  /^OPENSSL_/,
  /^CURL_/,
  /^GIT_/,
  /^XDG_/,
  /^DBUS_/,
  /PROXY$/i,
  /^PADDOCK_(?!RUNNER_)/,
];

/** Why a manifest may not set variable `name` (undefined: it may). */
export function refusedEnvName(name: string): string | undefined {
  if (REFUSED_ENV.some((re) => re.test(name)))
    return 'is read by the host, a loader, an interpreter or a shell; a runner package may never set it';
  return undefined;
}

/** The runner's own prefix: its id upper-snake-cased, e.g. `local-agent` → `LOCAL_AGENT_`. */
export function runnerEnvPrefix(runnerId: string): string {
  return `${runnerId.toUpperCase().replaceAll('-', '_')}_`;
}

/**
 * The manifest env rule (an allowlist): a name must be upper-snake-case and in the runner's own
 * namespace — `PADDOCK_RUNNER_*` or its id's prefix (`ECHO_*` for `echo`) — and never one of
 * the refused names. Returns why `name` is refused, or undefined.
 */
export function manifestEnvProblem(runnerId: string, name: string): string | undefined {
  if (!/^[A-Z][A-Z0-9_]*$/.test(name)) return 'must be upper-snake-case (A-Z, 0-9, _)';
  const refused = refusedEnvName(name);
  if (refused) return refused;
  const own = runnerEnvPrefix(runnerId);
  if (
    !(name.startsWith('PADDOCK_RUNNER_') && name.length > 15) &&
    !(name.startsWith(own) && name.length > own.length)
  ) {
    return `is outside the runner's namespace: a manifest may set only PADDOCK_RUNNER_* or ${own}* variables`;
  }
  return undefined;
}

/** Inputs to {@link buildRunnerEnv}. */
export interface RunnerEnvSpec {
  /** The host's environment; only {@link INHERITED_ENV} is read from it. */
  hostEnv: NodeJS.ProcessEnv;
  home: string;
  tmpDir: string;
  runId: string;
  /** Literal, non-secret variables from the runner manifest (already checked by its schema). */
  extra?: Record<string, string>;
}

/**
 * Build a runner's environment from an allowlist. Never a copy of the host environment: the
 * host's provider keys and tokens must not reach a runner (docs/security-model.md). The
 * manifest's names were checked against {@link manifestEnvProblem} when it was loaded; refused
 * names are dropped here again, so no other caller can smuggle one in.
 */
export function buildRunnerEnv(spec: RunnerEnvSpec): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of INHERITED_ENV) {
    const value = spec.hostEnv[name];
    if (value !== undefined) env[name] = value;
  }
  for (const [name, value] of Object.entries(spec.extra ?? {})) {
    if ((HOST_SET_ENV as readonly string[]).includes(name) || refusedEnvName(name)) continue;
    env[name] = value;
  }
  env.HOME = spec.home;
  env.TMPDIR = spec.tmpDir;
  env.PADDOCK_RUN_ID = spec.runId;
  return env;
}
