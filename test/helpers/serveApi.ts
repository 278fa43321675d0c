// The HTTP calls the `paddock serve` tests make of a host, with the status each must answer checked.
import { expect } from 'vitest';
import type { ServeChild } from './serve.js';

/** A host's 202 answer to a posted event. */
export interface DispatchAnswer {
  status: string;
  runId: string;
  sessionId: string;
  links: Record<string, string>;
  /** Steering `append`, a live run, and still a run of its own: why. */
  notAppended?: { code: string; message: string };
}

/** `POST /v1/events` to `host` with a platform `token`; fails the test unless it answers 202. */
export async function dispatchTo(host: ServeChild, token: string, event: unknown): Promise<DispatchAnswer> {
  const res = await fetch(`${host.url}/v1/events`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(event),
  });
  const body = (await res.json()) as DispatchAnswer;
  expect(res.status, JSON.stringify(body)).toBe(202);
  return body;
}

/** `GET /v1/runs/:id` on `host`; fails the test unless it answers 200. */
export async function runFrom(host: ServeChild, token: string, runId: string) {
  const res = await fetch(`${host.url}/v1/runs/${runId}`, { headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  return (await res.json()) as { status: string; reason?: string };
}
