// What the console tests ask the API directly (the same endpoints the pages read): dispatch a chat event as a bot
// platform, read JSON, and a run's stored events (its SSE stream, which ends after the run's terminal event).
import { chatEvent } from './host.js';

/** A JSON call with `token`; throws on a status other than `expect`. */
export async function apiCall<T>(
  url: string,
  token: string,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
  expect = [200, 202],
): Promise<T> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!expect.includes(res.status)) throw new Error(`${method} ${path} answered ${res.status}: ${text}`);
  return JSON.parse(text) as T;
}

/** `POST /v1/events` of a message `text` to bot `bot` in conversation `conversation`; the run and session ids. */
export async function dispatchText(
  url: string,
  platformToken: string,
  bot: string,
  conversation: string,
  text: string,
) {
  const event = chatEvent({ bot, text, conversation: { id: conversation } });
  return apiCall<{ runId: string; sessionId: string; status: string }>(url, platformToken, 'POST', '/v1/events', event);
}

/** The stored events of an ended run (`GET /v1/runs/:id/events`: replayed, then the response ends). */
export async function endedRunEvents(url: string, token: string, runId: string) {
  const res = await fetch(`${url}/v1/runs/${runId}/events`, { headers: { authorization: `Bearer ${token}` } });
  if (res.status !== 200) throw new Error(`run events answered ${res.status}`);
  const text = await res.text();
  return text
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => JSON.parse(line.slice(6)) as { seq: number; type: string; data: Record<string, unknown> });
}

/**
 * The id of the run's first pending approval, once its host has recorded the runner's ask (polled through the API,
 * no fixed wait; fails after 20 s — a run under load takes seconds to start and ask).
 */
export async function pendingApprovalId(url: string, token: string, runId: string): Promise<string> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const page = await apiCall<{ approvals: { id: string }[] }>(
      url,
      token,
      'GET',
      `/v1/approvals?status=pending&runId=${runId}`,
    );
    if (page.approvals[0]) return page.approvals[0].id;
    if (Date.now() > deadline) throw new Error(`no pending approval for ${runId} after 20 s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
