// The runners, bindings and resources pages in a real browser against a real `paddock serve --console`: a runner
// listed with its risk; disabling a binding from the console refuses the next event and cancels the running run
// (checked over HTTP); the explanation's NOT enforced and degraded lines in red; a runner manifest's planted markup
// shown as text; 400 px wide; a viewer sees no switch. Screenshots: runners, bindings, binding, resources.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, openPage, screenshot, signInWith, type WatchedPage } from '../helpers/browser.js';
import { startConsoleServer, type ConsoleServer } from '../helpers/consoleServe.js';
import { chatEvent } from '../helpers/host.js';
import { rendezvous } from '../helpers/rendezvous.js';

const work = mkdtempSync(join(tmpdir(), 'paddock-console-config-'));
const rv = rendezvous(work);
const skill = join(work, 'style-guide');
mkdirSync(skill);
writeFileSync(join(skill, 'SKILL.md'), '---\nname: style-guide\ndescription: How we write.\n---\nShort sentences.\n');

const yaml = () =>
  [
    'resources:',
    '  models:',
    '    - { id: budget-model, provider: scripted, model: scripted-1,',
    '        pricing: { inputPerMTokUsd: 3, outputPerMTokUsd: 15 } }',
    '  mcpServers:',
    '    - { id: search-tools, command: /bin/true, tools: { allow: [search, read], deny: [delete] } }',
    '  skills:',
    `    - { id: style-guide, name: style-guide, path: ${skill} }`,
    'bindings:',
    '  - { id: held, runner: waits-for-go, sandbox: process, route: { platform: telegram, bot: held },',
    `      config: { socket: ${rv.path} } }`,
    '  - { id: marked, runner: describes-itself-with-markup, sandbox: process,',
    '      route: { platform: telegram, bot: marked }, limits: { modelTokensPerDay: 50000 },',
    '      grants: { models: [budget-model], skills: [style-guide],',
    '                mcpServers: [{ id: search-tools, tools: [search] }] } }',
    // PADDOCK_BWRAP names no binary below: this bwrap binding degrades to the process backend, and says so.
    '  - { id: degrades, runner: echo, sandbox: bwrap, allowDegrade: true,',
    '      route: { platform: telegram, bot: degrades } }',
    '  - { id: assistant, runner: echo, sandbox: process, route: { platform: openai, bot: assistant } }',
  ].join('\n');

let server: ConsoleServer;
let browser: Browser;
const tok = { admin: '', viewer: '', platform: '' };

beforeAll(async () => {
  server = await startConsoleServer({ yaml: yaml(), env: { PADDOCK_BWRAP: join(work, 'no-bwrap-here') } });
  [tok.admin, tok.viewer, tok.platform] = await Promise.all([
    server.token('default', 'admin', 'console-admin'),
    server.token('default', 'viewer'),
    server.token('default', 'platform'),
  ]);
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
  rv.close();
  await server?.stop();
});

/** A real HTTP call of the API (not through the browser). */
async function call(method: string, path: string, token: string, body?: unknown) {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as Record<string, unknown> };
}

/** A signed-in page at `viewport` that also fails on any dialog (alert, confirm) the page opens by itself. */
async function signedIn(token: string, viewport?: { width: number; height: number }): Promise<WatchedPage> {
  const watched = await openPage(browser, viewport);
  watched.page.on('dialog', (d) => {
    watched.problems.push(`dialog opened: ${d.message()}`);
    void d.dismiss();
  });
  await signInWith(watched.page, server.url, token);
  return watched;
}

/** Go to a console route and wait for its heading. */
async function visit(page: Page, hash: string, heading: string | RegExp): Promise<void> {
  await page.goto(`${server.url}/console/${hash}`);
  await page.getByRole('heading', { level: 1, name: heading }).waitFor();
}

/** Nothing the planted markup asked for exists or ran. */
async function assertNothingPlanted(page: Page): Promise<void> {
  for (const id of ['planted-img', 'planted-name', 'planted-frame', 'planted-link'])
    expect(await page.locator(`#${id}`).count(), id).toBe(0);
  expect(await page.locator('main script, main img, main iframe').count()).toBe(0);
  expect(await page.evaluate(() => (window as unknown as { __markupRan?: number }).__markupRan)).toBeUndefined();
}

describe('console: runners, bindings, resources', () => {
  it('the runners page lists each runner with its risk, and the bindings of the tenant that use it', async () => {
    const w = await signedIn(tok.admin);
    await visit(w.page, '#/runners', 'Runners');
    const echo = w.page.getByRole('row').filter({ hasText: 'None: reads nothing, writes nothing, calls nothing.' });
    await echo.waitFor();
    await expect(echo.getByRole('link', { name: 'Echo' }).count()).resolves.toBe(1);
    await expect(echo.getByRole('link', { name: 'degrades' }).count()).resolves.toBe(1);
    await expect(echo.getByRole('link', { name: 'assistant' }).count()).resolves.toBe(1);
    // A runner without a risk note is flagged, not left blank.
    const held = w.page.getByRole('row').filter({ has: w.page.getByRole('link', { name: 'Waits for go' }) });
    await expect(held.getByText('no risk note in the manifest').count()).resolves.toBe(1);
    await screenshot(w, 'runners');

    await held.getByRole('link', { name: 'Waits for go' }).click();
    await w.page.getByRole('heading', { level: 1, name: /Runner Waits for go/ }).waitFor();
    await expect(w.page.locator('main').getByRole('link', { name: 'held' }).count()).resolves.toBe(1);
    w.assertClean();
    await w.context.close();
  });

  it("planted markup in a runner's manifest renders as text, on the list, its page and its binding", async () => {
    const w = await signedIn(tok.admin);
    await visit(w.page, '#/runners', 'Runners');
    const main = w.page.locator('main');
    await main.getByText('Says <img id="planted-img"', { exact: false }).waitFor();
    const text = await main.innerText();
    expect(text).toContain('<script>window.__markupRan=1</script>');
    expect(text).toContain('Risky <iframe id="planted-frame"');
    expect(text).toContain('Markup <em id="planted-name">name</em>');
    await assertNothingPlanted(w.page);

    await visit(w.page, '#/runners/describes-itself-with-markup', /Runner Markup/);
    expect(await main.innerText()).toContain('href="javascript:alert(1)">click</a>');
    await assertNothingPlanted(w.page);

    await visit(w.page, '#/bindings/marked', 'Binding marked enabled');
    await main.getByText('Risky <iframe', { exact: false }).first().waitFor();
    await assertNothingPlanted(w.page);
    w.assertClean();
    await w.context.close();
  });

  it('the explanation shows what is NOT enforced and what is degraded in red', async () => {
    const w = await signedIn(tok.admin);
    await visit(w.page, '#/bindings/degrades', 'Binding degrades enabled');
    const degraded = w.page.locator('ul.degraded li').first();
    await expect(degraded.innerText()).resolves.toMatch(/^DEGRADED: bwrap unavailable/);
    const notEnforced = w.page.locator('ul.not-enforced li');
    await notEnforced.first().waitFor();
    expect(await notEnforced.count()).toBeGreaterThan(0);
    await expect(w.page.getByRole('heading', { name: 'NOT enforced' }).count()).resolves.toBe(1);
    // The stylesheet's --bad red (#b3261e), computed by the browser; enforced lines keep the text colour.
    const red = 'rgb(179, 38, 30)';
    const color = (l: ReturnType<Page['locator']>) => l.evaluate((el) => getComputedStyle(el).color);
    expect(await color(degraded)).toBe(red);
    expect(await color(notEnforced.first())).toBe(red);
    expect(await color(w.page.locator('ul.enforced li').first())).not.toBe(red);
    await screenshot(w, 'binding');
    w.assertClean();
    await w.context.close();
  });

  it('disabling a binding with "cancel active runs" cancels its running run and refuses the next event', async () => {
    const started = await call(
      'POST',
      '/v1/events',
      tok.platform,
      chatEvent({ bot: 'held', conversation: { id: 'a' } }),
    );
    expect(started.status).toBe(202);
    const runId = started.body.runId as string;
    await rv.arrived(runId);

    const w = await signedIn(tok.admin);
    await visit(w.page, '#/bindings/held', 'Binding held enabled');
    await w.page.getByRole('button', { name: 'Disable binding' }).click();
    const dialog = w.page.getByRole('dialog', { name: 'Disable binding "held"?' });
    await dialog.getByLabel(/Cancel active runs/).check();
    await dialog.getByRole('button', { name: 'Disable and cancel runs' }).click();
    await w.page
      .getByRole('status')
      .filter({ hasText: `1 active run asked to cancel: ${runId}.` })
      .waitFor();
    await w.page.getByRole('heading', { level: 1, name: 'Binding held disabled' }).waitFor();

    // Over HTTP: the run's stream ends at its terminal event, and the run ended cancelled.
    const stream = await fetch(`${server.url}/v1/runs/${runId}/events`, {
      headers: { authorization: `Bearer ${tok.platform}` },
    });
    expect(await stream.text()).toContain('event: run.ended');
    expect((await call('GET', `/v1/runs/${runId}`, tok.platform)).body.status).toBe('cancelled');
    const refused = await call(
      'POST',
      '/v1/events',
      tok.platform,
      chatEvent({ bot: 'held', conversation: { id: 'b' } }),
    );
    expect([refused.status, refused.body.code]).toEqual([422, 'binding_disabled']);

    // Enabling it again is the operator's: a tenant admin may not re-validate a process-sandbox binding through the
    // API, and the dialog says why (the API's reason), leaving the binding as it is.
    await w.page.getByRole('button', { name: 'Enable binding' }).click();
    const enable = w.page.getByRole('dialog', { name: 'Enable binding "held"?' });
    await enable.getByRole('button', { name: 'Enable', exact: true }).click();
    await enable
      .getByRole('alert')
      .filter({ hasText: 'bindings[0].sandbox: an admin through the API cannot' })
      .first()
      .waitFor();
    await enable.getByRole('button', { name: 'Keep as it is' }).click();
    expect((await call('GET', '/v1/bindings/held', tok.admin)).body.spec).toMatchObject({ enabled: false });
    w.assertClean();
    await w.context.close();
  });

  it('the bindings and resources pages show routes, grants, budgets, allowed tools and skill digests', async () => {
    const w = await signedIn(tok.admin);
    await visit(w.page, '#/bindings', 'Bindings');
    const marked = w.page.getByRole('row').filter({ has: w.page.getByRole('link', { name: 'marked' }) });
    await expect(marked.innerText()).resolves.toContain('platform telegram · bot marked');
    await screenshot(w, 'bindings');

    await visit(w.page, '#/resources', 'Resources');
    const main = w.page.locator('main');
    const model = w.page.getByRole('row').filter({ hasText: 'budget-model' });
    await expect(model.innerText()).resolves.toMatch(/\$3 in \/ \$15 out per M tokens[\s\S]*50,000 tokens a day/);
    const tools = w.page.getByRole('row').filter({ hasText: 'search-tools' });
    await expect(tools.innerText()).resolves.toMatch(/search, read[\s\S]*delete/);
    const skillRow = w.page.getByRole('row').filter({ hasText: 'style-guide' });
    await skillRow.getByText('as applied').waitFor();
    await expect(skillRow.innerText()).resolves.toMatch(/sha256:/);
    await expect(main.getByRole('link', { name: 'assistant' }).count()).resolves.toBeGreaterThan(0);
    await screenshot(w, 'resources');
    w.assertClean();
    await w.context.close();
  });

  it('works 400 px wide, and a viewer sees every page but no switch', async () => {
    const w = await signedIn(tok.viewer, { width: 400, height: 800 });
    const pages: [string, string | RegExp][] = [
      ['#/runners', 'Runners'],
      ['#/runners/waits-for-go', /Runner Waits for go/],
      ['#/bindings', 'Bindings'],
      ['#/bindings/marked', /Binding marked/],
      ['#/resources', 'Resources'],
    ];
    for (const [hash, heading] of pages) {
      await visit(w.page, hash, heading);
      await w.page.locator('main table, main dl').first().waitFor();
      // Nothing wider than the window: tables stack, long words wrap.
      const overflow = await w.page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect([hash, overflow]).toEqual([hash, 0]);
    }
    await expect(w.page.getByRole('button', { name: /Disable binding|Enable binding/ }).count()).resolves.toBe(0);
    // The API refuses the viewer anyway.
    expect((await call('POST', '/v1/bindings/marked/disable', tok.viewer, {})).status).toBe(403);
    w.assertClean();
    await w.context.close();
  });
});
