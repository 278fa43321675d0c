// The soak's host: a data folder with one echo binding and two API tokens (platform: dispatch; admin: /metrics),
// served by one long-lived `paddock serve` child (bench/serveChild.ts), and one run through it over HTTP.
import { request } from 'node:http';
import { applyConfig } from '../../../host/bindings/apply.js';
import { parseLimits } from '../../../host/config/limits.js';
import { configureContainer } from '../../../host/di/configure.js';
import { TOKENS } from '../../../host/di/tokens.js';
import { discoverRunners } from '../../../host/plugins/catalog.js';
import { createApiToken } from '../../../host/state/apiTokens.js';
import { SseParser } from '../../helpers/sse.js';

/** Prepares `dataDir` (`sandbox`: the binding's backend); returns the platform and admin tokens. */
export function prepareDataDir(dataDir: string, sandbox: string): { platform: string; admin: string } {
  const config = { dataDir, limits: parseLimits(), runnerDirs: [], logLevel: 'silent', keepWorkspaces: false };
  const store = configureContainer(config).resolve(TOKENS.Store);
  try {
    const bindings = [{ id: 'soak', runner: 'echo', sandbox, route: { platform: 'soak', bot: 'echo' } }];
    applyConfig(store, { bindings }, { catalog: discoverRunners([]), mountRoots: [] }, { by: 'soak' });
    const platform = createApiToken(store, { tenant: 'default', role: 'platform', by: 'soak' }).token;
    const admin = createApiToken(store, { tenant: 'default', role: 'admin', by: 'soak' }).token;
    return { platform, admin };
  } finally {
    store.close();
  }
}

/** A chat event for the soak binding: `id` unique, `conversation` one of a few (bounded sessions), `text`. */
export const soakEvent = (id: string, conversation: string, text: string) => ({
  id,
  platform: 'soak',
  bot: 'echo',
  conversation: { type: 'private' as const, id: conversation },
  sender: { id: 'u' },
  message: { parts: [{ type: 'text' as const, text }] },
  receivedAt: new Date().toISOString(),
});

/** POSTs the event and follows the run's stream to its end; resolves with the run id and its end's data. */
export async function runThroughServe(
  url: string,
  token: string,
  event: object,
): Promise<{ runId: string; end: string }> {
  const res = await httpCall(`${url}/v1/events`, token, JSON.stringify(event));
  const answer = JSON.parse(res.body) as { status: string; runId?: string; links?: { runEvents: string } };
  if (res.status !== 202 || answer.status !== 'started' || !answer.links)
    throw new Error(`dispatch answered ${res.status}: ${res.body}`);
  const runId = answer.runId ?? /runs\/([^/]+)/.exec(answer.links.runEvents)?.[1] ?? '';
  const end = await untilEnded(`${url}${answer.links.runEvents}`, token);
  return { runId, end };
}

/** Follows an SSE stream to its `run.ended` or `run.interrupted` message; resolves with `event: data`. */
function untilEnded(url: string, token: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const parser = new SseParser();
    const req = request(url, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`stream answered ${res.statusCode}`));
      res.on('data', (chunk: Buffer) => {
        const end = parser.feed(chunk).find((m) => m.event === 'run.ended' || m.event === 'run.interrupted');
        if (end) {
          req.destroy();
          resolve(`${end.event}: ${end.data}`);
        }
      });
      res.on('end', () => reject(new Error('stream ended without the run ending')));
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * The host's live heap, heap used and total, its young generation's size (V8's new space: both semi-spaces, which
 * V8 grows up to twice `--max-semi-space-size` when much survives a scavenge) and its external memory, in bytes, from
 * its /metrics.
 */
export async function heapFigures(url: string, adminToken: string) {
  const res = await httpCall(`${url}/metrics`, adminToken);
  const read = (name: string) => {
    const m = new RegExp(`^${name.replace(/[{}]/g, '\\$&')} (\\d+)`, 'm').exec(res.body);
    if (!m) throw new Error(`/metrics answered ${res.status} without ${name}`);
    return Number(m[1]);
  };
  return {
    heapLive: read('paddock_heap_live_bytes'),
    heapUsed: read('nodejs_heap_size_used_bytes'),
    heapTotal: read('nodejs_heap_size_total_bytes'),
    youngGen: read('nodejs_heap_space_size_total_bytes{space="new"}'),
    external: read('nodejs_external_memory_bytes'),
  };
}

/**
 * One request on its own connection (no keep-alive agent), POST when a body is given: the host's fd count then
 * holds no idle client connection, so it can be compared exactly.
 */
function httpCall(url: string, token: string, body?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const headers = { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) };
    const req = request(url, { method: body ? 'POST' : 'GET', agent: false, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}
