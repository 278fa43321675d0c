// The runners, bindings and resources pages in a real browser against a real `paddock serve --console`: a runner
// listed with its risk; disabling a binding from the console refuses the next event and cancels the running run
// (checked over HTTP); the explanation's NOT enforced and degraded lines in red; a runner manifest's planted markup
// shown as text; the resources page's spend (from real model calls) equal to GET /v1/spend, a skill edited after
// apply flagged in red; 400 px wide; a viewer sees no switch. Screenshots: runners, bindings, binding, resources.
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
// A second skill, edited after apply: the run of binding `spender` finds it changed.
const tone = join(work, 'tone');
mkdirSync(tone);
writeFileSync(join(tone, 'SKILL.md'), '---\nname: tone\nversion: 1.0.0\n---\nBe kind.\n');

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
    `    - { id: tone, name: tone, path: ${tone} }`,
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
    // Real model calls: two completions of the scripted model through the host gateway, under day budgets.
    '  - { id: spender, runner: calls-gateway, sandbox: process, route: { platform: telegram, bot: spender },',
    '      grants: { models: [budget-model], skills: [tone] },',
    '      limits: { modelTokensPerDay: 100000, modelCostPerDayUsd: 5 },',
    '      config: { steps: [{ do: complete, model: budget-model, text: "SAY:one" },',
    '                        { do: complete, model: budget-model, text: "SAY:two" }] } }',
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

  it('bindings and resources: routes, grants, budgets, allowed tools, spend, skill digests and changes', async () => {
    // A run of `spender` that calls the model twice and finds skill `tone` edited since it was applied.
    writeFileSync(join(tone, 'SKILL.md'), '---\nname: tone\nversion: 1.0.0\n---\nBe curt. Edited after apply.\n');
    const started = await call('POST', '/v1/events', tok.platform, chatEvent({ bot: 'spender' }));
    expect(started.status).toBe(202);
    const runId = started.body.runId as string;
    const stream = await fetch(`${server.url}/v1/runs/${runId}/events`, {
      headers: { authorization: `Bearer ${tok.platform}` },
    });
    expect(await stream.text()).toContain('event: run.ended');
    const spend = (await call('GET', '/v1/spend', tok.admin)).body as {
      models: { model: string; calls: number; inputTokens: number; outputTokens: number; costUsd: number }[];
      bindings: { binding: string; tokens: number; costUsd: number }[];
    };
    const used = spend.models.find((m) => m.model === 'budget-model')!;
    expect(used.calls).toBe(2);
    const spender = spend.bindings.find((b) => b.binding === 'spender')!;
    expect(spender.tokens).toBe(used.inputTokens + used.outputTokens);

    const w = await signedIn(tok.admin);
    await visit(w.page, '#/bindings', 'Bindings');
    const marked = w.page.getByRole('row').filter({ has: w.page.getByRole('link', { name: 'marked' }) });
    await expect(marked.innerText()).resolves.toContain('platform telegram · bot marked');
    await screenshot(w, 'bindings');

    await visit(w.page, '#/resources', 'Resources');
    const main = w.page.locator('main');
    // Figures as the page formats them, in the browser's own locale.
    const n = (x: number) => w.page.evaluate((v) => v.toLocaleString(), x);
    const model = w.page.getByRole('row').filter({ hasText: 'budget-model' }).first();
    await expect(model.innerText()).resolves.toMatch(/\$3 in \/ \$15 out per M tokens[\s\S]*50,000 tokens a day/);
    const modelText = await model.innerText();
    expect(modelText).toContain(
      `2 calls: ${await n(used.inputTokens)} tokens in, ${await n(used.outputTokens)} tokens out, ` +
        `$${used.costUsd.toFixed(4)}`,
    );
    expect(await main.getByText('not in the API').count()).toBe(0);
    // The spend table's row of binding spender (the one with a meter; the skills table links spender too).
    const spenderRow = main
      .getByRole('row')
      .filter({ has: w.page.getByRole('link', { name: 'spender' }) })
      .filter({ has: w.page.getByRole('meter') });
    const spenderText = await spenderRow.innerText();
    expect(spenderText).toContain(`${await n(spender.tokens)} of ${await n(100000)} tokens today`);
    expect(spenderText).toContain(`$${spender.costUsd.toFixed(4)} of $5.00 today`);
    await expect(spenderRow.getByRole('meter').first().getAttribute('value')).resolves.toBe(String(spender.tokens));

    const tools = w.page.getByRole('row').filter({ hasText: 'search-tools' });
    await expect(tools.innerText()).resolves.toMatch(/search, read[\s\S]*delete/);
    const skillRow = w.page.getByRole('row').filter({ hasText: 'style-guide' });
    await skillRow.getByText('as applied').waitFor();
    await expect(skillRow.innerText()).resolves.toMatch(/sha256:/);
    // The changed skill: flagged in red, naming the run that found it.
    const toneRow = w.page.getByRole('row').filter({ hasText: 'tone' }).filter({ hasText: 'changed since applied' });
    const flag = toneRow.locator('.badge.bad');
    await expect(flag.innerText()).resolves.toBe('changed since applied');
    await expect(flag.evaluate((e) => getComputedStyle(e).color)).resolves.toBe('rgb(179, 38, 30)');
    await expect(toneRow.innerText()).resolves.toContain(runId);
    const skills = (await call('GET', '/v1/skills', tok.admin)).body.skills as { id: string; changed: unknown }[];
    expect(skills.find((x) => x.id === 'tone')!.changed).toMatchObject({ runId });
    expect(skills.find((x) => x.id === 'style-guide')!.changed).toBeNull();
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
