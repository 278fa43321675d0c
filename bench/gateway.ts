import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { openScriptedRun } from '../host/gateway/scriptedRun.js';
import { parseLimits } from '../host/config/limits.js';
import { configureContainer } from '../host/di/configure.js';
import { TOKENS } from '../host/di/tokens.js';
import { WIRES } from '../host/gateway/wire/index.js';
import { fmt, summarize } from './stats.js';

/**
 * The gateway's cost per model call: the same streamed Anthropic answer (a short one, and one
 * of 1 000 SSE deltas) fetched from a bare Node HTTP server that only writes the pre-rendered
 * bytes (baseline), and through the gateway with the scripted provider (token check, grant,
 * budget query, breaker, scripted planning and rendering, chunk-safe redaction, usage assembly,
 * one SQLite row + one audit record per call). Sequential calls, interleaved, keep-alive.
 */
export async function gatewayBench(count = 300) {
  const dataDir = mkdtempSync(`${tmpdir()}/paddock-bench-gateway-`);
  const container = configureContainer({
    dataDir,
    limits: parseLimits(),
    runnerDirs: [],
    logLevel: 'silent',
    keepWorkspaces: false,
  });
  const gateway = container.resolve(TOKENS.Gateway);
  const handle = await openScriptedRun(gateway, 'run-bench');
  const bodies = {
    short: 'SAY:hello there',
    long: 'LONG:1000',
  };
  // The baseline serves exactly the bytes the scripted provider renders for the same request.
  const rendered = (text: string, chunks: number) =>
    WIRES.anthropic.render(
      {
        id: 'm',
        model: 'scripted-1',
        content: [{ type: 'text', text }],
        stopReason: 'end_turn',
        usage: { inputTokens: 30, outputTokens: 10 },
      },
      true,
      chunks,
    );
  const canned = {
    short: rendered('hello there', 1),
    long: rendered(Array.from({ length: 1000 }, (_, i) => `chunk ${i + 1}`).join(' ') + '.', 1000),
  };
  const bare = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const part of raw.includes('LONG') ? canned.long : canned.short) res.write(part);
      res.end();
    });
  });
  await new Promise<void>((r) => bare.listen(0, '127.0.0.1', r));
  const bareUrl = `http://127.0.0.1:${(bare.address() as AddressInfo).port}`;
  const call = async (base: string, text: string) => {
    const t = performance.now();
    const response = await fetch(`${base}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': handle.token },
      body: JSON.stringify({ model: 'sm', max_tokens: 100, stream: true, messages: [{ role: 'user', content: text }] }),
    });
    await response.text();
    if (response.status !== 200) throw new Error(`status ${response.status}`);
    return performance.now() - t;
  };
  const results: Record<string, { bare: ReturnType<typeof summarize>; gateway: ReturnType<typeof summarize> }> = {};
  console.log(`\n## Gateway cost per model call (${count} sequential calls per case, interleaved, first 10 dropped)`);
  console.log(
    'method: fetch of a streamed Anthropic answer; baseline = bare node:http server writing the same pre-rendered SSE',
  );
  console.log(
    '        bytes; gateway = run token → grant → budget (SQL sum) → breaker → scripted provider → redaction → record.',
  );
  for (const [name, text] of Object.entries(bodies)) {
    const n = name === 'long' ? Math.ceil(count / 3) : count;
    const times = { bare: [] as number[], gateway: [] as number[] };
    for (let i = 0; i < n + 10; i++) {
      const b = await call(bareUrl, text);
      const g = await call(handle.baseUrl, text);
      if (i >= 10) {
        times.bare.push(b);
        times.gateway.push(g);
      }
    }
    const b = summarize(times.bare);
    const g = summarize(times.gateway);
    console.log(
      `${name === 'short' ? 'short answer  ' : '1 000 deltas  '} bare: median ${fmt(b.median, 2)} ms · ` +
        `gateway: median ${fmt(g.median, 2)} ms, p90 ${fmt(g.p90, 2)} ms · ratio ${fmt(g.median / b.median, 2)}× ` +
        `(+${fmt(g.median - b.median, 2)} ms)`,
    );
    results[name] = { bare: b, gateway: g };
  }
  await handle.close();
  await gateway.close();
  bare.close();
  container.resolve(TOKENS.Store).close();
  rmSync(dataDir, { recursive: true, force: true });
  return results;
}
