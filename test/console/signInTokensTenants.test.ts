// The console's own pages in a real chromium against a real `paddock serve --console`: signing in (a refused token
// shows the API's reason), the overview's figures against the API's, verifying the audit chain, tokens made and
// revoked from the console, what a viewer token sees and what the API refuses it, and that a tenant's console
// shows only its tenant. Also: a 400 px window and the keyboard.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, openPage, screenshot, signInWith } from '../helpers/browser.js';
import { startConsoleServer, type ConsoleServer } from '../helpers/consoleServe.js';
import { chatEvent } from '../helpers/host.js';

const binding = (tenant: string, id: string, bot: string) =>
  `  - { id: ${id}, tenant: ${tenant}, runner: echo, sandbox: process, route: { platform: telegram, bot: ${bot} } }`;
const YAML = ['bindings:', binding('default', 'acme-echo', 'acme'), binding('beta', 'beta-echo', 'beta')].join('\n');

let browser: Browser;
let srv: ConsoleServer;
const tok = { admin: '', platform: '', betaAdmin: '', betaPlatform: '' };

async function api(token: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${srv.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as Record<string, unknown> };
}

/** Dispatch `n` events through the API and wait until each run has ended (a bounded poll of its real status). */
async function runs(token: string, bot: string, n: number) {
  for (let i = 0; i < n; i++) {
    const sent = await api(token, 'POST', '/v1/events', chatEvent({ bot, text: `hello ${i}` }));
    expect(sent.status).toBe(202);
    const runId = sent.body.runId as string;
    const deadline = Date.now() + 30_000;
    while (['queued', 'running'].includes((await api(token, 'GET', `/v1/runs/${runId}`)).body.status as string)) {
      if (Date.now() > deadline) throw new Error(`run ${runId} did not end`);
      await new Promise((r) => setTimeout(r, 50)); // the poll interval, not a wait for an outcome
    }
  }
}

beforeAll(async () => {
  srv = await startConsoleServer({ yaml: YAML });
  tok.admin = await srv.token('default', 'admin', 'ops admin');
  tok.platform = await srv.token('default', 'platform', 'acme platform');
  tok.betaAdmin = await srv.token('beta', 'admin', 'beta admin');
  tok.betaPlatform = await srv.token('beta', 'platform', 'beta platform');
  await runs(tok.platform, 'acme', 3);
  await runs(tok.betaPlatform, 'beta', 1);
  browser = await launchBrowser();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  expect(await srv.stop()).toBe(0);
});

describe('console: sign-in, overview, audit, tokens, roles and tenants', () => {
  it('a refused token shows the API reason; a good one shows the overview with the API figures', async () => {
    const w = await openPage(browser);
    await w.page.goto(`${srv.url}/console/`);
    await w.page.getByLabel('API token').fill('pdk_000000000000_notarealsecretnotarealsecretnotarealsec');
    await w.page.getByRole('button', { name: 'Sign in' }).click();
    await expect
      .poll(() => w.page.getByRole('alert').innerText())
      .toMatch(/Sign-in failed: Authentication required.*invalid: /s);
    await w.page.getByLabel('API token').fill(tok.admin);
    await w.page.getByRole('button', { name: 'Sign in' }).click();
    await w.page.getByRole('heading', { name: 'Overview' }).waitFor();
    const figures = (await api(tok.admin, 'GET', '/v1/overview')).body as {
      runs: { last24h: { byOutcome: Record<string, number>; total: number } };
    };
    expect(figures.runs.last24h.byOutcome.completed).toBe(3); // this tenant's runs only: beta's one is not here
    await w.page.getByRole('heading', { name: /Runs ended in the last 24 hours: 3/ }).waitFor();
    const completed = w.page.locator('table.outcomes tr', { hasText: 'completed' }).locator('td.num');
    expect(await completed.innerText()).toBe('3');
    await w.page
      .getByText(/never verified|intact/)
      .first()
      .waitFor();
    await w.page
      .getByRole('cell', { name: 'bwrap' })
      .or(w.page.getByRole('cell', { name: 'process' }))
      .first()
      .waitFor();
    await screenshot(w, 'overview');
    // A reload keeps the tab's session; signing out forgets it.
    await w.page.reload();
    await w.page.getByRole('heading', { name: 'Overview' }).waitFor();
    await w.page.getByRole('button', { name: 'Sign out' }).click();
    await w.page.getByLabel('API token').waitFor();
    await w.page.reload();
    await w.page.getByLabel('API token').waitFor();
    expect(await w.page.evaluate(() => sessionStorage.length)).toBe(0);
    w.assertClean();
    await w.context.close();
  });

  it('verifying the chain from the console says intact, and the overview then shows that verification', async () => {
    const w = await openPage(browser);
    await signInWith(w.page, srv.url, tok.admin);
    await w.page.getByRole('link', { name: 'Audit' }).click();
    await w.page.getByRole('button', { name: 'Verify now' }).click();
    await w.page.getByRole('status').filter({ hasText: 'intact' }).waitFor();
    // Recent records, newest first, as rows: the token creations and run ends of this tenant.
    await w.page.getByText(/latest records?, newest first/).waitFor();
    const seqs = await w.page.locator('tbody tr td:first-child').allInnerTexts();
    expect(seqs.length).toBeGreaterThan(3);
    expect(seqs.map(Number)).toEqual([...seqs.map(Number)].sort((a, b) => b - a));
    await screenshot(w, 'audit');
    await w.page.getByRole('link', { name: 'Overview' }).click();
    await w.page.getByRole('heading', { name: 'Overview' }).waitFor();
    await expect
      .poll(() => w.page.locator('main').innerText())
      .toMatch(/intact \d+ records verified .* from the console or API\./);
    w.assertClean();
    await w.context.close();
  });

  it('a token made in the console is shown once and works; revoked from the console, its session ends', async () => {
    const admin = await openPage(browser);
    await signInWith(admin.page, srv.url, tok.admin);
    await admin.page.getByRole('link', { name: 'Tokens' }).click();
    await admin.page.getByLabel('Role').selectOption('viewer');
    await admin.page.getByLabel('Name').fill('auditor <b>bold</b>');
    await admin.page.getByRole('button', { name: 'Create token' }).click();
    const made = await admin.page.getByLabel('Token', { exact: true }).inputValue();
    expect(made).toMatch(/^pdk_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/);
    // The name is text, not markup; the list never holds the secret.
    await admin.page.getByRole('cell', { name: 'auditor <b>bold</b>' }).waitFor();
    expect(await admin.page.locator('main b').count()).toBe(0);
    await admin.page.getByRole('button', { name: 'I have copied it' }).click();
    await screenshot(admin, 'tokens'); // after the secret is gone from the page: docs hold no token
    expect(await admin.page.locator('main').innerText()).not.toContain(made.slice(-43));

    // The viewer: reads, but sees no admin action, and the API refuses each.
    const viewer = await openPage(browser);
    await signInWith(viewer.page, srv.url, made);
    await viewer.page
      .getByText(/viewer/)
      .first()
      .waitFor();
    const nav = await viewer.page.getByRole('navigation').innerText();
    expect(nav).not.toContain('Tokens');
    expect(nav).toContain('Audit');
    await viewer.page.goto(`${srv.url}/console/#/tokens`);
    await viewer.page.getByRole('heading', { name: 'Not found' }).waitFor();
    expect(await viewer.page.getByRole('button', { name: /Revoke|Create|Disable|Approve|Cancel/ }).count()).toBe(0);
    for (const [method, path, body] of [
      ['POST', '/v1/tokens', { role: 'admin' }],
      ['POST', `/v1/tokens/${made.split('_')[1]}/revoke`, undefined],
      ['POST', '/v1/bindings/acme-echo/disable', {}],
      ['POST', '/v1/events', chatEvent({ bot: 'acme' })],
    ] as const) {
      const refused = await api(made, method, path, body);
      expect(refused.status, path).toBe(403);
      expect(refused.body.detail).toMatch(/a viewer token may not call this endpoint/);
    }

    // Revoked from the admin's console (confirmed), the viewer's next request signs it out with the reason.
    await admin.page
      .getByRole('row', { name: /auditor/ })
      .getByRole('button', { name: 'Revoke' })
      .click();
    await admin.page.getByRole('dialog').getByRole('button', { name: 'Revoke token' }).click();
    await admin.page
      .getByRole('row', { name: /auditor/ })
      .getByText('revoked')
      .waitFor();
    // The hash change mounts the overview, whose request is refused 401: the console forgets the token.
    await viewer.page.goto(`${srv.url}/console/#/overview`);
    await viewer.page
      .getByRole('alert')
      .filter({ hasText: /revoked/ })
      .waitFor();
    await viewer.page.getByLabel('API token').waitFor();
    admin.assertClean();
    viewer.assertClean();
    await admin.context.close();
    await viewer.context.close();
  });

  it('the recent records read (order=desc) refuses a cursor of the other direction, naming the field', async () => {
    const wrong = await api(tok.admin, 'GET', '/v1/audit/export?before=5');
    expect(wrong.status).toBe(400);
    expect(wrong.body.errors).toEqual([expect.objectContaining({ path: 'querystring.before' })]);
    const both = await api(tok.admin, 'GET', '/v1/audit/export?order=desc&after=5&before=x');
    expect((both.body.errors as { path: string }[]).map((e) => e.path).sort()).toEqual([
      'querystring.after',
      'querystring.before',
    ]);
  });

  it("a tenant's console shows only its tenant: its tokens, records and figures", async () => {
    const w = await openPage(browser);
    await signInWith(w.page, srv.url, tok.betaAdmin);
    await w.page.getByText(/of tenant beta/).waitFor();
    await w.page.getByRole('heading', { name: /Runs ended in the last 24 hours: 1/ }).waitFor();
    await w.page.getByRole('link', { name: 'Tokens' }).click();
    await w.page.getByRole('cell', { name: 'beta admin' }).waitFor();
    const tokens = await w.page.locator('main').innerText();
    expect(tokens).not.toMatch(/ops admin|acme platform/);
    await w.page.getByRole('link', { name: 'Audit' }).click();
    await w.page.getByText(/latest records?, newest first/).waitFor(); // the audit table itself, not the last page's
    const audit = await w.page.locator('main').innerText();
    expect(audit).not.toMatch(/acme-echo|ops admin/);
    expect(audit).toMatch(/beta/);
    w.assertClean();
    await w.context.close();
  });

  it('at 400 px wide nothing overflows sideways, and the keyboard reaches and follows the navigation', async () => {
    const w = await openPage(browser, { width: 400, height: 800 });
    await signInWith(w.page, srv.url, tok.admin);
    await w.page.getByRole('heading', { name: 'Overview' }).waitFor();
    const overflow = await w.page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await screenshot(w, 'overview-narrow');
    // Tab from the top: the skip link first, then the sign-out button and the navigation's links.
    await w.page.keyboard.press('Tab');
    expect(await w.page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    let reached = false;
    for (let i = 0; i < 12 && !reached; i++) {
      await w.page.keyboard.press('Tab');
      reached = (await w.page.evaluate(() => document.activeElement?.textContent)) === 'Audit';
    }
    expect(reached).toBe(true);
    await w.page.keyboard.press('Enter');
    await w.page.getByRole('heading', { name: 'Audit' }).waitFor();
    w.assertClean();
    await w.context.close();
  });
});
