// The live runs and sessions pages in a real browser against a real `paddock serve --console`: a real run of the
// says-on-cue fixture speaks one line at a time (the test decides when), the run page shows each update as it is
// streamed, in the order of the run's stored events; cancel from the page ends a run cancelled; planted markup in a
// message and a run's output shows as text; the pages work at 400 px wide.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, openPage, screenshot, signInWith, type WatchedPage } from '../helpers/browser.js';
import { apiCall, dispatchText, endedRunEvents } from '../helpers/consoleApi.js';
import { startConsoleServer, type ConsoleServer } from '../helpers/consoleServe.js';
import { cues, type Cues } from '../helpers/cuedServe.js';

const PLANTED = `<img src=x onerror="window.__planted=1"><script>window.__planted=2</script>`;

const cueDir = mkdtempSync(join(tmpdir(), 'paddock-console-cues-'));
let cue: Cues;
let server: ConsoleServer;
let browser: Browser;
const tok = { admin: '', platform: '', viewer: '' };
let first = { runId: '', sessionId: '' };

beforeAll(async () => {
  cue = cues(cueDir);
  server = await startConsoleServer({
    yaml: [
      'bindings:',
      `  - { id: cued, runner: says-on-cue, sandbox: process, config: { socket: ${JSON.stringify(cue.path)} },`,
      '      route: { platform: telegram, bot: cued } }',
      '  - { id: resumer, runner: echoes-resume-pointers, sandbox: process,',
      '      route: { platform: telegram, bot: resumer } }',
    ].join('\n'),
  });
  [tok.admin, tok.platform, tok.viewer] = await Promise.all([
    server.token('default', 'admin', 'ada'),
    server.token('default', 'platform'),
    server.token('default', 'viewer'),
  ]);
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
  cue?.close();
  rmSync(cueDir, { recursive: true, force: true });
});

/** Signed in as `token` on `#/<route>`. */
async function open(token: string, route: string, viewport?: { width: number; height: number }) {
  const watched = await openPage(browser, viewport);
  await signInWith(watched.page, server.url, token);
  await watched.page.goto(`${server.url}/console/#/${route}`);
  return watched;
}

/** The seqs the page's event list shows, top to bottom. */
const shownSeqs = (w: WatchedPage, label = 'Run events') =>
  w.page
    .getByRole('list', { name: label })
    .locator(':scope > li')
    .evaluateAll((items) => items.map((li) => Number((li as HTMLElement).dataset.seq)));

/** Nothing planted ran: no element was made from it and no script set the marker. */
async function assertInert(w: WatchedPage) {
  expect(await w.page.locator('main img, main script').count()).toBe(0);
  expect(await w.page.evaluate(() => (window as unknown as { __planted?: number }).__planted)).toBeUndefined();
}

describe('the live run page', () => {
  it('shows each update as the run streams it, in the order of its stored events; markup stays text', async () => {
    first = await dispatchText(server.url, tok.platform, 'cued', 'chat-1', `please ${PLANTED}`);
    const run = await cue.next();
    expect(run.runId).toBe(first.runId);
    const w = await open(tok.admin, `runs/${run.runId}`);
    const events = w.page.getByRole('list', { name: 'Run events' });
    await w.page.getByRole('heading', { name: `Run ${run.runId}` }).waitFor();
    await w.page.getByText('(live)').waitFor();
    // Each line appears only after the test made the run say it: the page is following the stream.
    const said = ['first update', 'second update', `third ${PLANTED}`, 'fourth update'];
    for (const line of said) {
      run.say(line);
      await events.getByText(line, { exact: true }).waitFor();
    }
    await w.page.locator('dd').getByText('running', { exact: true }).waitFor();
    await assertInert(w);
    await events.getByText('fourth update', { exact: true }).scrollIntoViewIfNeeded();
    await screenshot(w, 'run');

    run.end();
    await w.page.getByText('(the run is over)').waitFor();
    await w.page.locator('dd').getByText('completed', { exact: true }).waitFor();
    const stored = await endedRunEvents(server.url, tok.admin, run.runId);
    expect(await shownSeqs(w)).toEqual(stored.map((e) => e.seq));
    // The said lines in the DOM are in the order they were said, each once.
    const texts = await events.locator('.event-text').allInnerTexts();
    expect(texts.filter((t) => said.includes(t))).toEqual(said);
    await assertInert(w);
    w.assertClean();
    await w.context.close();
  });

  it('cancel, confirmed in a dialog, ends the run cancelled; the list shows running and ended runs', async () => {
    const second = await dispatchText(server.url, tok.platform, 'cued', 'chat-2', 'a long job');
    const run = await cue.next();
    run.say('working on it');
    const list = await open(tok.admin, 'runs');
    const running = list.page.getByRole('row').filter({ hasText: second.runId });
    await running.getByText('running', { exact: true }).waitFor();
    await list.page.getByRole('row').filter({ hasText: first.runId }).getByText('completed', { exact: true }).waitFor();
    await screenshot(list, 'runs');
    await running.getByRole('link', { name: second.runId }).click();

    await list.page.getByText('working on it', { exact: true }).waitFor();
    await list.page.getByRole('button', { name: 'Cancel run' }).click();
    const dialog = list.page.getByRole('dialog', { name: `Cancel run ${second.runId}?` });
    await dialog.getByRole('button', { name: 'Cancel the run' }).click();
    await list.page.getByText('(the run is over)').waitFor();
    await list.page.locator('dd').getByText('cancelled', { exact: true }).waitFor();
    const after = await apiCall<{ status: string }>(server.url, tok.admin, 'GET', `/v1/runs/${second.runId}`);
    expect(after.status).toBe('cancelled');
    await list.page.getByRole('button', { name: 'Cancel run' }).waitFor({ state: 'detached' });
    list.assertClean();
    await list.context.close();
  });

  it('a viewer sees no cancel, and the API refuses the viewer a cancel', async () => {
    const third = await dispatchText(server.url, tok.platform, 'cued', 'chat-3', 'viewer watches');
    const run = await cue.next();
    run.say('watched');
    const w = await open(tok.viewer, `runs/${third.runId}`);
    await w.page.getByText('watched', { exact: true }).waitFor();
    expect(await w.page.getByRole('button', { name: 'Cancel run' }).count()).toBe(0);
    const refused = await fetch(`${server.url}/v1/runs/${third.runId}/cancel`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tok.viewer}` },
    });
    expect(refused.status).toBe(403);
    run.end();
    await w.page.getByText('(the run is over)').waitFor();
    w.assertClean();
    await w.context.close();
  });
});

describe('the sessions pages', () => {
  it('list the sessions; one shows its transcript, runs and events, markup as text', async () => {
    const w = await open(tok.admin, 'sessions');
    const row = w.page.getByRole('row').filter({ hasText: first.sessionId });
    await row.waitFor();
    await screenshot(w, 'sessions');
    await row.getByRole('link', { name: first.sessionId }).click();
    await w.page.getByRole('heading', { name: `Session ${first.sessionId}` }).waitFor();
    const transcript = w.page.getByRole('list', { name: 'Transcript' });
    await transcript.getByText(`please ${PLANTED}`).waitFor();
    await w.page.getByRole('row').filter({ hasText: first.runId }).getByText('completed', { exact: true }).waitFor();
    await w.page.getByRole('list', { name: 'Session events' }).getByText('fourth update', { exact: true }).waitFor();
    await assertInert(w);
    await screenshot(w, 'session');
    w.assertClean();
    await w.context.close();
  });

  it("shows the harness resume pointers a session's run saved", async () => {
    const run = await dispatchText(server.url, tok.platform, 'resumer', 'chat-r', 'abc');
    const w = await open(tok.admin, `sessions/${run.sessionId}`);
    const pointers = w.page.locator('dt:has-text("Resume pointers") + dd');
    await pointers.getByText('harness session harness-session-abc').waitFor();
    await pointers.getByRole('link', { name: run.runId }).waitFor();
    w.assertClean();
    await w.context.close();
  });
});

describe('at 400 px wide', () => {
  it('the runs list, a run and a session fit the width (tables stack)', async () => {
    const narrow = { width: 400, height: 800 };
    for (const route of ['runs', `runs/${first.runId}`, 'sessions', `sessions/${first.sessionId}`]) {
      const w = await open(tok.admin, route, narrow);
      await w.page.locator('main h1').waitFor();
      await w.page.locator('main a, main .empty').first().waitFor();
      const width = await w.page.evaluate(() => document.documentElement.scrollWidth);
      expect(width, route).toBeLessThanOrEqual(400);
      w.assertClean();
      await w.context.close();
    }
  });
});
