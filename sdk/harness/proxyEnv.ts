/** The proxy variables a harness keeps from the runner's environment, and nothing else. */
const PROXY_VARS = ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy'] as const;

/** The host gateway is on loopback: never through the egress proxy. */
export const GATEWAY_NO_PROXY = '127.0.0.1,localhost';

/**
 * The egress proxy settings for a harness CLI and the tools it runs: the HTTP(S)_PROXY variables
 * the host set for this run (bwrap with a `network.egress` allowlist, docs/security-model.md),
 * copied from the runner's environment, plus NO_PROXY for the gateway's loopback. Empty proxy
 * variables when the host set none (no network, or the process backend).
 */
export function proxyEnv(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of PROXY_VARS) {
    const value = env[name];
    if (value) out[name] = value;
  }
  return { ...out, NO_PROXY: GATEWAY_NO_PROXY, no_proxy: GATEWAY_NO_PROXY };
}
