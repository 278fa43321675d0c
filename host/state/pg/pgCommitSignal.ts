import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import type { Client, Notification } from 'pg';
import { HostError } from '../../errors.js';
import { COMMIT_CHANNELS, type CommitSignal, type CommitTopic, type CommitWake } from '../commitSignal.js';

const require = createRequire(import.meta.url);

/** The `application_name` of the LISTEN connection: how an operator (and a test) tells it in `pg_stat_activity`. */
export const LISTEN_APPLICATION_NAME = 'paddock-listen';

/** Bounds of the wait before a lost LISTEN connection is opened again (doubling while it keeps failing). */
const RETRY_MIN_MS = 50;
const RETRY_MAX_MS = 2_000;

const TOPICS = Object.keys(COMMIT_CHANNELS) as CommitTopic[];
const TOPIC_OF = new Map(TOPICS.map((t) => [COMMIT_CHANNELS[t], t]));

/** node-postgres's client class (an optional dependency beside pg-native, decision PG5). */
function loadClient(): typeof Client {
  try {
    return (require('pg') as { Client: typeof Client }).Client;
  } catch (error) {
    throw new HostError(
      'STATE_UNAVAILABLE',
      `the PostgreSQL store needs the optional dependency pg (node-postgres; npm install): ${(error as Error).message}`,
      {},
      { cause: error },
    );
  }
}

/**
 * PostgreSQL's "commits by others" (commitSignal.ts; docs/scale-out.md §4): one async node-postgres connection that
 * LISTENs on every topic's channel, opened on first use. A notification from another backend bumps its topic's
 * version and wakes the topic's watchers with its payload; one from the store's own connection (`ownPid`) is
 * dropped, as SQLite's `data_version` ignores its own connection's commits (its listeners hear those). A lost
 * connection (a restart, `pg_terminate_backend`, a network cut) is opened again, 50 ms doubling to 2 s; once it
 * LISTENs again every topic is bumped and every watcher woken without a key, since notifications sent meanwhile
 * were lost (the log is not). The socket never keeps the process alive: the watchers' own timers decide that.
 */
export class PgCommitSignal implements CommitSignal {
  private readonly ClientClass = loadClient();
  private readonly versions = new Map<CommitTopic, number>(TOPICS.map((t) => [t, 0]));
  private readonly wakes = new Map<CommitTopic, Set<CommitWake>>(TOPICS.map((t) => [t, new Set()]));
  private client: Client | undefined;
  private retry: NodeJS.Timeout | undefined;
  private retryMs = RETRY_MIN_MS;
  private closed = false;
  /** LISTEN connections made so far (1 after the first; each reconnection adds one): for tests and metrics. */
  connections = 0;

  constructor(
    private readonly url: string,
    /** The backend pid of the store's own (libpq) connection now, whose notifications are its own commits. */
    private readonly ownPid: () => number,
  ) {}

  version(topic: CommitTopic): number {
    this.listen();
    return this.versions.get(topic)!;
  }

  onChange(topic: CommitTopic, wake: CommitWake): () => void {
    this.listen();
    // A Set of functions: each call gets its own entry even for the same function.
    const entry: CommitWake = (key) => wake(key);
    this.wakes.get(topic)!.add(entry);
    return () => void this.wakes.get(topic)!.delete(entry);
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.retry);
    const client = this.client;
    this.client = undefined;
    client?.end().catch(() => undefined);
  }

  /** Open the LISTEN connection unless it is open, being opened, or waiting to be opened again. */
  private listen(): void {
    if (this.client || this.retry || this.closed) return;
    const client = new this.ClientClass({ connectionString: this.url, application_name: LISTEN_APPLICATION_NAME });
    this.client = client;
    // Errors arrive as events too (a terminated backend): without a listener they would crash the process.
    client.on('error', () => this.lost(client));
    client.on('end', () => this.lost(client));
    client.on('notification', (message) => this.heard(message));
    client
      .connect()
      .then(() => {
        (client as unknown as { connection: { stream: Socket } }).connection.stream.unref();
        return client.query(TOPICS.map((t) => `LISTEN ${COMMIT_CHANNELS[t]}`).join('; '));
      })
      .then(() => {
        if (this.client !== client) return;
        this.retryMs = RETRY_MIN_MS;
        this.connections += 1;
        // What other connections committed before this LISTEN took effect was not heard: every watcher re-reads.
        for (const topic of TOPICS) this.bump(topic, undefined);
      })
      .catch(() => this.lost(client));
  }

  private lost(client: Client): void {
    if (this.client !== client) return;
    this.client = undefined;
    client.end().catch(() => undefined);
    if (this.closed) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      this.listen();
    }, this.retryMs);
    this.retry.unref();
    this.retryMs = Math.min(this.retryMs * 2, RETRY_MAX_MS);
  }

  private heard(message: Notification): void {
    if (message.processId === this.ownPid()) return;
    const topic = TOPIC_OF.get(message.channel);
    if (topic) this.bump(topic, message.payload || undefined);
  }

  private bump(topic: CommitTopic, key: string | undefined): void {
    this.versions.set(topic, this.versions.get(topic)! + 1);
    // Copied: a wake may unsubscribe (and edit the set) at once.
    for (const wake of [...this.wakes.get(topic)!]) {
      try {
        wake(key);
      } catch (error) {
        // A watcher's bug is not the connection's: the others still hear the commit.
        process.emitWarning(`a commit watcher failed on a notification of ${topic}: ${String(error)}`);
      }
    }
  }
}
