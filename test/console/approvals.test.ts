// The approvals page in a real browser against a real `paddock serve --console`: a real run of the
// asks-for-approval fixture waits on an approval; approved from the console (with a session grant) the run goes on
// and completes with the approval's answer; the grant is revoked (confirmed); another ask is denied (confirmed); a
// viewer sees no decision and the API refuses it one; planted markup in the runner's summary renders as text.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, openPage, screenshot, signInWith, type WatchedPage } from '../helpers/browser.js';
import { apiCall, dispatchText, endedRunEvents, pendingApprovalId } from '../helpers/consoleApi.js';
import { startConsoleServer, type ConsoleServer } from '../helpers/consoleServe.js';

const PLANTED = `<img src=x onerror="window.__planted=1"><script>window.__planted=2</script>`;

let server: ConsoleServer;
let browser: Browser;
const tok = { approver: '', platform: '', viewer: '', admin: '' };

beforeAll(async () => {
  server = await startConsoleServer({
    yaml: [
      'bindings:',
      '  - { id: asker, runner: asks-for-approval, sandbox: process, route: { platform: telegram, bot: asker },',
      '      grants: { approval: true }, approvalPolicy: ask }',
    ].join('\n'),
  });
  [tok.approver, tok.platform, tok.viewer, tok.admin] = await Promise.all([
    server.token('default', 'approver', 'grace'),
    server.token('default', 'platform'),
    server.token('default', 'viewer'),
    server.token('default', 'admin'),
  ]);
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

/** Signed in as `token` on the approvals page. */
async function openApprovals(token: string, viewport?: { width: number; height: number }) {
  const watched = await openPage(browser, viewport);
  await signInWith(watched.page, server.url, token);
  await watched.page.goto(`${server.url}/console/#/approvals`);
  await watched.page.getByRole('heading', { name: 'Approvals' }).waitFor();
  return watched;
}

/** A run asking for `exec` of `command` (summary `summary`, lifetime up to a session); its ids and approval. */
async function askingRun(conversation: string, command: string, summary: string) {
  const asks = [{ effect: 'exec', target: command, summary, scope: 'session' }];
  const run = await dispatchText(server.url, tok.platform, 'asker', conversation, JSON.stringify(asks));
  // The run's host records the ask when the runner's request reaches it: poll the API for it (no fixed wait).
  const approvalId = await pendingApprovalId(server.url, tok.approver, run.runId);
  return { ...run, approvalId };
}

/** The run's answers (the fixture's output: the host's decision for each ask), once it has ended. */
async function answersOf(runId: string) {
  await expect
    .poll(async () => (await apiCall<{ status: string }>(server.url, tok.admin, 'GET', `/v1/runs/${runId}`)).status, {
      timeout: 20_000,
      interval: 100,
    })
    .toBe('completed');
  const ended = (await endedRunEvents(server.url, tok.admin, runId)).find((e) => e.type === 'run.ended')!;
  const parts = (ended.data.result as { output: { parts: { text: string }[] } }).output.parts;
  return JSON.parse(parts[0]!.text) as { decision?: string; reason?: string; grantId?: string }[];
}

const card = (w: WatchedPage, approvalId: string) => w.page.locator(`li[data-approval="${approvalId}"]`);

describe('the approvals page', () => {
  it('a real run waits on an approval; approved from the console, the run goes on and completes', async () => {
    const asked = await askingRun('chat-1', 'make release', `cut a release ${PLANTED}`);

    // A viewer reads it but has nothing to decide with; the API refuses the viewer a decision.
    const viewer = await openApprovals(tok.viewer);
    await card(viewer, asked.approvalId).waitFor();
    expect(await viewer.page.getByRole('button', { name: 'Approve' }).count()).toBe(0);
    expect(await viewer.page.getByRole('button', { name: 'Deny' }).count()).toBe(0);
    const refused = await fetch(`${server.url}/v1/approvals/${asked.approvalId}/approve`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tok.viewer}` },
    });
    expect(refused.status).toBe(403);
    viewer.assertClean();
    await viewer.context.close();

    const w = await openApprovals(tok.approver);
    const pending = card(w, asked.approvalId);
    await pending.waitFor();
    // One sentence: the effect, the target, the risk, who asked (the run's runner), the run, how long ago.
    const sentence = await pending.locator('.sentence').innerText();
    expect(sentence).toMatch(/^exec of make release .*risk.* asked by asks-for-approval \(through .+\), run run_/);
    expect(sentence).toContain(asked.runId);
    // The runner's summary is shown as the characters it sent; nothing of it ran or became an element.
    expect(await pending.getByLabel("The runner's summary").innerText()).toBe(`cut a release ${PLANTED}`);
    expect(await w.page.locator('main img, main script').count()).toBe(0);
    expect(await w.page.evaluate(() => (window as unknown as { __planted?: number }).__planted)).toBeUndefined();
    // The lifetimes offered stop at what the run asked for (a session), never wider.
    const lifetime = pending.getByLabel('Approve');
    expect(await lifetime.locator('option').evaluateAll((o) => o.map((x) => (x as HTMLOptionElement).value))).toEqual([
      'once',
      'run',
      'session',
    ]);
    await screenshot(w, 'approvals');

    await lifetime.selectOption('session');
    await pending.getByLabel('Reason (optional)').fill('release day');
    await pending.getByRole('button', { name: 'Approve' }).click();
    // A lasting grant is confirmed first, naming how far it reaches.
    await w.page
      .getByRole('dialog')
      .getByText(/for the whole session\?/)
      .waitFor();
    await w.page.getByRole('dialog').getByRole('button', { name: 'Approve and grant' }).click();
    await pending.waitFor({ state: 'detached' });
    const answers = await answersOf(asked.runId);
    expect(answers).toEqual([expect.objectContaining({ decision: 'approved', grantId: expect.any(String) })]);

    // History names the decision and who made it; the session grant it left is listed and revoked (confirmed).
    const history = w.page.getByRole('row').filter({ hasText: asked.runId });
    await history.getByText('approved', { exact: true }).waitFor();
    await history.getByText('release day').waitFor();
    const grant = w.page.getByRole('row').filter({ has: w.page.getByRole('button', { name: 'Revoke' }) });
    await grant.filter({ hasText: 'make release' }).getByRole('button', { name: 'Revoke' }).click();
    await w.page
      .getByRole('dialog', { name: 'Revoke the grant of exec on make release?' })
      .getByRole('button', { name: 'Revoke the grant' })
      .click();
    await w.page.getByText('No live grant.').waitFor();
    const grants = await apiCall<{ grants: { id: string; revokedAt: string | null }[] }>(
      server.url,
      tok.approver,
      'GET',
      '/v1/grants?all=true',
    );
    expect(grants.grants.find((g) => g.id === answers[0]!.grantId)?.revokedAt).not.toBeNull();
    w.assertClean();
    await w.context.close();
  });

  it('deny is confirmed in a dialog; the run hears "denied" and completes', async () => {
    const asked = await askingRun('chat-2', 'rm -rf build', 'clean the build folder');
    const w = await openApprovals(tok.approver);
    const pending = card(w, asked.approvalId);
    await pending.getByLabel('Reason (optional)').fill('not now');
    await pending.getByRole('button', { name: 'Deny' }).click();
    const dialog = w.page.getByRole('dialog', { name: /^Deny .*build.*\?$/ });
    // Keeping it as it is decides nothing.
    await dialog.getByRole('button', { name: 'Keep as it is' }).click();
    await dialog.waitFor({ state: 'hidden' });
    expect(await pending.count()).toBe(1);
    await pending.getByRole('button', { name: 'Deny' }).click();
    await dialog.getByRole('button', { name: 'Deny it' }).click();
    await pending.waitFor({ state: 'detached' });
    expect(await answersOf(asked.runId)).toEqual([expect.objectContaining({ decision: 'denied' })]);
    await w.page.getByRole('row').filter({ hasText: asked.runId }).getByText('denied', { exact: true }).waitFor();
    w.assertClean();
    await w.context.close();
  });

  it('works at 400 px wide: a pending approval and its controls fit the width', async () => {
    const asked = await askingRun('chat-3', 'npm publish', 'publish the package');
    const w = await openApprovals(tok.approver, { width: 400, height: 800 });
    await card(w, asked.approvalId).getByRole('button', { name: 'Approve' }).waitFor();
    expect(await w.page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(400);
    await card(w, asked.approvalId).getByRole('button', { name: 'Approve' }).click();
    await card(w, asked.approvalId).waitFor({ state: 'detached' });
    expect(await answersOf(asked.runId)).toEqual([expect.objectContaining({ decision: 'approved' })]);
    w.assertClean();
    await w.context.close();
  });
});
