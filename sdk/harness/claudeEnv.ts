import { proxyEnv } from './proxyEnv.js';

/**
 * The environment Claude Code needs to run offline against the host gateway, plus the run's egress
 * proxy variables (from `proxy`, default the runner's own environment), and nothing else.
 */
export function claudeEnv(input: {
  path: string;
  home: string;
  tmp: string;
  baseUrl: string;
  token: string;
  model: string;
  proxy?: NodeJS.ProcessEnv;
}): Record<string, string> {
  return {
    PATH: input.path,
    HOME: input.home,
    TMPDIR: input.tmp,
    CLAUDE_CODE_TMPDIR: input.tmp,
    LANG: 'C.UTF-8',
    ANTHROPIC_BASE_URL: input.baseUrl,
    // The run token, never a provider key: it is only good at the gateway, for this run.
    ANTHROPIC_API_KEY: input.token,
    // Background calls (titles, summaries) use the granted model too, never an ungranted one.
    ANTHROPIC_SMALL_FAST_MODEL: input.model,
    ANTHROPIC_DEFAULT_HAIKU_MODEL: input.model,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_ERROR_REPORTING: '1',
    // The run's egress proxy (its Bash reaches the binding's allowlist through it), never the gateway.
    ...proxyEnv(input.proxy),
    // The gateway already retries with backoff and a circuit breaker; one more try here is enough.
    CLAUDE_CODE_MAX_RETRIES: '1',
  };
}
