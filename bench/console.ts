// The admin console's first paint (issue 15: "first paint of the overview under 1 s on this machine with 1,000 runs
// stored"): a real `paddock serve --console` and headless chromium (Debian's, as the tests use). Each round is a
// fresh browser context (no cache) that loads /console/ with the tab's token already kept (as after a reload), and
// reports first contentful paint and the time until the overview shows its last figure (the outcome table and the
// sandbox table). Baseline: the same page on an empty data folder, same rounds, same browser.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { createApiToken } from '../host/state/apiTokens.js';
import { Store } from '../host/state/store.js';
import { startBenchServe } from './serveChild.js';
import { fmt, summarize } from './stats.js';

const STATUSES = ['completed', 'completed', 'completed', 'failed', 'cancelled', 'timed_out', 'crashed'] as const;

/** A data folder with `runs` ended runs (through the real store's API, within the last 24 h) and an admin token. */
function seeded(runs: number): { dir: string; token: string } {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-bench-console-'));
  const store = Store.open({ dataDir: dir });
  try {
    for (let i = 0; i < runs; i++) {
      const { sessionId } = store.ensureSession('default', `bind-${i % 10}`, `conv-${i}`);
      const runId = `run_${randomUUID()}`;
      store.append(sessionId, [
        {
          type: 'run.queued',
          runId,
          data: { runner: 'echo', goalRevision: 1, attempt: 1, bindingId: `bind-${i % 10}` },
        },
        { type: 'run.started', runId, data: { pid: process.pid, pidStart: null } },
      ]);
      store.append(sessionId, [
        {
          type: 'run.ended',
          runId,
          data: { status: STATUSES[i % STATUSES.length]!, reason: 'bench', exitCode: 0, signal: null, limits: [] },
        },
      ]);
    }
    const { token } = createApiToken(store, { tenant: 'default', role: 'admin', name: 'bench', by: 'bench' });
    return { dir, token };
  } finally {
    store.close();
  }
}

/** Rounds of loading the overview on a server over `dir`: first contentful paint and last figure, in ms. */
async function measure(browser: Browser, dir: string, token: string, rounds: number) {
  const serve = await startBenchServe(dir, ['--console', '--rate', '1000', '--burst', '1000']);
  const fcp: number[] = [];
  const ready: number[] = [];
  try {
    for (let i = 0; i < rounds + 1; i++) {
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const page = await context.newPage();
      await page.addInitScript((t) => sessionStorage.setItem('paddock.console.token', t), token);
      await page.goto(`${serve.url}/console/`);
      // The last figure: the outcome table and the sandbox backends' table both drawn.
      await page.waitForSelector('table.outcomes tbody tr');
      await page.waitForSelector('main tbody tr td[data-label="Backend"]');
      const t = await page.evaluate(() => ({
        ready: performance.now(),
        fcp: performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? NaN,
      }));
      await context.close();
      if (i === 0) continue; // warm-up: the server's first answers compile its routes
      fcp.push(t.fcp);
      ready.push(t.ready);
    }
  } finally {
    await serve.stop();
  }
  return { fcp: summarize(fcp), ready: summarize(ready) };
}

/** First paint and last figure of the overview with 1 000 runs stored, beside an empty data folder. */
export async function consoleBench(runs = 1000, rounds = 10) {
  console.log(`\n## Console overview first paint (${runs} runs stored vs none; median of ${rounds} fresh contexts)`);
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox'],
  });
  const empty = seeded(0);
  const full = seeded(runs);
  try {
    const base = await measure(browser, empty.dir, empty.token, rounds);
    const loaded = await measure(browser, full.dir, full.token, rounds);
    const line = (name: string, s: { fcp: { median: number; p90: number }; ready: { median: number; p90: number } }) =>
      console.log(
        `  ${name}: first contentful paint ${fmt(s.fcp.median, 0)} ms (p90 ${fmt(s.fcp.p90, 0)}), ` +
          `last figure ${fmt(s.ready.median, 0)} ms (p90 ${fmt(s.ready.p90, 0)})`,
      );
    line('no runs (baseline)', base);
    line(`${runs} runs`, loaded);
    console.log(`  ratio (last figure): ×${fmt(loaded.ready.median / base.ready.median)}`);
    return {
      runs,
      baseline: { fcpMs: base.fcp.median, readyMs: base.ready.median },
      loaded: { fcpMs: loaded.fcp.median, readyMs: loaded.ready.median, readyP90Ms: loaded.ready.p90 },
    };
  } finally {
    await browser.close();
    rmSync(empty.dir, { recursive: true, force: true });
    rmSync(full.dir, { recursive: true, force: true });
  }
}
