// Harness environments keep the run's proxy variables and nothing else of the runner's env.
import { describe, expect, it } from 'vitest';
import { claudeEnv } from '../../../../sdk/harness/claudeEnv.js';
import { codexEnv } from '../../../../runners/codex/codex.js';
import { proxyEnv } from '../../../../sdk/harness/proxyEnv.js';

const proxy = 'http://127.0.0.1:3128';
const runnerEnv = {
  HTTP_PROXY: proxy,
  HTTPS_PROXY: proxy,
  http_proxy: proxy,
  https_proxy: proxy,
  ALL_PROXY: 'socks5://evil:1080',
  NO_PROXY: '*',
  no_proxy: '*',
  PADDOCK_RUN_TOKEN: 'tok',
  LD_PRELOAD: '/x.so',
  AWS_SECRET_ACCESS_KEY: 'canary',
  Http_Proxy: 'http://mixed-case:1',
};

describe('proxyEnv', () => {
  it('keeps the four proxy variables, fixes NO_PROXY to the gateway loopback, drops everything else', () => {
    expect(proxyEnv(runnerEnv)).toEqual({
      HTTP_PROXY: proxy,
      HTTPS_PROXY: proxy,
      http_proxy: proxy,
      https_proxy: proxy,
      NO_PROXY: '127.0.0.1,localhost',
      no_proxy: '127.0.0.1,localhost',
    });
    expect(proxyEnv({})).toEqual({ NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost' });
    expect(proxyEnv({ HTTPS_PROXY: '' })).not.toHaveProperty('HTTPS_PROXY');
  });

  it('claudeEnv and codexEnv carry the proxy and no other runner variable', () => {
    const base = { path: '/usr/bin', home: '/h', tmp: '/t', proxy: runnerEnv };
    for (const env of [
      claudeEnv({ ...base, baseUrl: 'http://127.0.0.1:3129', token: 'run-token', model: 'm' }),
      codexEnv({ ...base, codexHome: '/c', tokenEnv: 'PADDOCK_RUN_TOKEN', token: 'run-token' }),
    ]) {
      expect(env.HTTPS_PROXY).toBe(proxy);
      expect(env.http_proxy).toBe(proxy);
      expect(env.NO_PROXY).toBe('127.0.0.1,localhost');
      for (const name of ['ALL_PROXY', 'LD_PRELOAD', 'AWS_SECRET_ACCESS_KEY', 'Http_Proxy'])
        expect(env, name).not.toHaveProperty(name);
      expect(Object.values(env)).not.toContain('canary');
    }
  });
});
