// The cluster campaign's clients: a bot platform posting events to the hosts round-robin (redelivering to the next
// host when one is down, as a platform retries), and stream readers that follow a session's events across hosts,
// hopping to another host now and then with `Last-Event-ID`.
import { setTimeout as sleep } from 'node:timers/promises';
import { openSse, type SseClient } from '../../helpers/sse.js';
import type { ClusterHost } from './hosts.js';

/** A host's answer to a posted event (HTTP 202). */
export interface Ticket {
  status: string;
  runId: string;
  sessionId: string;
}

/**
 * Posts `event` to `hosts[first]`, and on a refused connection, a cut one, a 5xx or a full queue to the next host
 * (a platform's redelivery: the same event id, deduplicated by whichever host took it first), until one answers 202
 * or `deadlineMs` passes. Returns the ticket and every host that was tried, in order.
 */
export async function postEvent(
  hosts: readonly ClusterHost[],
  token: string,
  event: { id: string },
  first: number,
  deadlineMs = 60_000,
): Promise<{ ticket: Ticket; tried: string[] }> {
  const tried: string[] = [];
  let last = '';
  const until = Date.now() + deadlineMs;
  for (let i = first; ; i++) {
    const host = hosts[i % hosts.length]!;
    if (Date.now() > until)
      throw new Error(`event ${event.id} was not taken by any host in ${tried.length} tries; the last: ${last}`);
    if (!host.url) {
      if (i % hosts.length === (first + hosts.length - 1) % hosts.length) await sleep(100); // every host down
      continue;
    }
    tried.push(host.name);
    let res: Response;
    try {
      res = await fetch(`${host.url}/v1/events`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(event),
        signal: AbortSignal.timeout(20_000),
      });
    } catch (error) {
      last = `${host.name}: ${(error as Error).message} (${String((error as { cause?: unknown }).cause)})`;
      await sleep(10); // a platform's back-off before the next host
      continue; // down, or killed mid-request: whether it took the event or not, the next host's answer says
    }
    const text = await res.text().catch(() => '');
    last = `${host.name}: ${res.status} ${text.slice(0, 400)}`;
    if (res.status === 202) return { ticket: JSON.parse(text) as Ticket, tried };
    if (res.status >= 500 || res.status === 429) {
      await sleep(50);
      continue;
    }
    throw new Error(`event ${event.id}: host ${host.name} answered ${res.status}: ${text.slice(0, 500)}`);
  }
}

/**
 * Follows one session's event stream across hosts: opens it on a host, reads a few messages, then cuts it and opens it
 * again on another host from the last id it saw (and at once when its host is killed), until stopped. Keeps every
 * message's id and type in the order received.
 */
export class SessionFollower {
  readonly received: { seq: number; type: string; host: string }[] = [];
  reconnects = 0;
  private stopping = false;
  private client: SseClient | undefined;
  private readonly done: Promise<void>;

  constructor(
    readonly sessionId: string,
    private readonly hosts: readonly ClusterHost[],
    private readonly token: string,
    private readonly rand: () => number,
  ) {
    this.done = this.follow();
  }

  /** The last seq received (0 before any). */
  get lastSeq(): number {
    return this.received.at(-1)?.seq ?? 0;
  }

  /** Stop following; resolves once the current stream is closed. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.client?.destroy();
    await this.done;
  }

  private async follow(): Promise<void> {
    let at = Math.floor(this.rand() * this.hosts.length);
    while (!this.stopping) {
      at = (at + 1 + Math.floor(this.rand() * (this.hosts.length - 1))) % this.hosts.length;
      const host = this.hosts[at]!;
      if (!host.url) {
        await sleep(50);
        continue;
      }
      const hopAfter = 1 + Math.floor(this.rand() * 6);
      let seen = 0;
      try {
        const client = await openSse(`${host.url}/v1/sessions/${this.sessionId}/events`, {
          headers: { authorization: `Bearer ${this.token}` },
          ...(this.lastSeq > 0 ? { lastEventId: String(this.lastSeq) } : {}),
          onMessage: (m) => {
            if (this.stopping || !/^\d+$/.test(m.id)) return;
            this.received.push({ seq: Number(m.id), type: m.event, host: host.name });
            if (++seen >= hopAfter) this.client?.destroy();
          },
        });
        this.client = client;
        if (client.status !== 200) {
          client.destroy();
          await sleep(100);
          continue;
        }
        if (this.stopping) client.destroy();
        await client.closed;
      } catch {
        await sleep(50); // refused (the host is down): another host next
      }
      this.client = undefined;
      this.reconnects += 1;
    }
  }
}
