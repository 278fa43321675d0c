// A real browser for the console tests: Debian's chromium (installed by scripts/setup.sh) driven by playwright-core,
// headless. Every page is watched: a console error, an uncaught page error, a failed request or an answer of 500
// or more fails the test that opened it, and a screenshot is refused when the page's main region is empty.
import { existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { repoPath } from './fixtures.js';

/** The system chromium the tests drive (apt package `chromium`). */
export const CHROMIUM = '/usr/bin/chromium';

/** Start a headless chromium; fails loudly, naming the package, when it is not installed. */
export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} is missing: the console tests need Debian's chromium (scripts/setup.sh installs it)`);
  // --no-sandbox: the tests run as root in CI, where chromium's own sandbox refuses to start; the browser only
  // visits the loopback server the test started.
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
}

/** A page with what went wrong on it so far. */
export interface WatchedPage {
  page: Page;
  context: BrowserContext;
  /** Console errors, page errors, failed requests and 5xx answers, in order. */
  problems: string[];
  /** Throws listing every problem so far (call at a test's end, or before a screenshot). */
  assertClean(): void;
}

/** A fresh context (its own sessionStorage) and page at `viewport`, watched for problems. */
export async function openPage(
  browser: Browser,
  viewport = { width: 1280, height: 800 },
  options: { allowStatus?: number[] } = {},
): Promise<WatchedPage> {
  const context = await browser.newContext({ viewport, timezoneId: 'Europe/Berlin', locale: 'en-GB' });
  const page = await context.newPage();
  const problems: string[] = [];
  const allowed = new Set(options.allowStatus ?? []);
  page.on('console', (m) => {
    // A 4xx the test provoked shows as a console error of the failed fetch: those are asserted by the test itself.
    if (m.type() === 'error' && !/Failed to load resource: the server responded with a status of 4\d\d/.test(m.text()))
      problems.push(`console.error: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => {
    // An SSE stream the page closes on navigation is "aborted" by design.
    if (r.failure()?.errorText !== 'net::ERR_ABORTED')
      problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`);
  });
  page.on('response', (r) => {
    if (r.status() >= 500 && !allowed.has(r.status())) problems.push(`HTTP ${r.status()} from ${r.url()}`);
  });
  return {
    page,
    context,
    problems,
    assertClean() {
      if (problems.length > 0) throw new Error(`the page had problems:\n${problems.join('\n')}`);
    },
  };
}

/**
 * Write a screenshot of `page` to docs/console/<name>.png after checking it is worth looking at: the page is clean
 * and its main region holds a heading and some text (an empty or broken page fails the test instead).
 */
export async function screenshot(watched: WatchedPage, name: string): Promise<void> {
  watched.assertClean();
  const main = watched.page.locator('main');
  const text = (await main.innerText()).trim();
  if (text.length < 20) throw new Error(`refusing a screenshot of a nearly empty page (${JSON.stringify(text)})`);
  if ((await main.locator('h1').count()) === 0) throw new Error('refusing a screenshot of a page without a heading');
  const path = repoPath(`docs/console/${name}.png`);
  mkdirSync(dirname(path), { recursive: true });
  await watched.page.screenshot({ path, fullPage: false });
}

/** Sign in on the console at `url` with `token`; resolves when the signed-in layout shows. */
export async function signInWith(page: Page, url: string, token: string): Promise<void> {
  await page.goto(`${url}/console/`);
  await page.getByLabel('API token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}
