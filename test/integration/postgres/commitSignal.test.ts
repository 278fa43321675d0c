// "Commits by others" on both stores (docs/scale-out.md §4, decision PG6): another process on the same store
// (test/fixtures/commitsOnRequest.ts) commits an event, a cancel request, a claim's release and an approval decision,
// and this process's watchers hear each — through SQLite's data_version, or PostgreSQL's LISTEN/NOTIFY. On PostgreSQL
// a LISTEN connection killed with pg_terminate_backend comes back, and nothing committed meanwhile is missed. Real
// parts: a real PostgreSQL cluster, real second processes and connections.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CommitWatcher } from '../../../host/api/streams/commitWatcher.js';
import { RunControlWatcher, type RunControl } from '../../../host/dispatch/runControls.js';
import {
  approvalsChangedSince,
  insertApproval,
  lastApprovalChange,
  type NewApproval,
} from '../../../host/state/approvals.js';
import { ClaimWaker, claimedRunsTotal, tryClaim } from '../../../host/state/claims.js';
import type { CommitTopic } from '../../../host/state/commitSignal.js';
import { LISTEN_APPLICATION_NAME, PgCommitSignal } from '../../../host/state/pg/pgCommitSignal.js';
import { PgDb } from '../../../host/state/pg/pgDb.js';
import type { Store } from '../../../host/state/store.js';
import { repoPath } from '../../helpers/fixtures.js';
import { postgresBackend, sqliteBackend, type StoreBackend } from '../../helpers/storeBackends.js';

/** The other process: `ask` sends one request and resolves once it has committed it. */
interface OtherHost {
  ask(request: Record<string, string>): Promise<void>;
  end(): Promise<void>;
}

async function otherHost(options: { dataDir: string; databaseUrl?: string }): Promise<OtherHost> {
  const child: ChildProcessWithoutNullStreams = spawn(
    process.execPath,
    ['--import', 'tsx', repoPath('test/fixtures/commitsOnRequest.ts'), options.dataDir, options.databaseUrl ?? ''],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const expectLine = async (line: string) => {
    const next = await lines.next();
    if (next.value !== line) throw new Error(`the other process said ${String(next.value)}, not ${line}: ${stderr}`);
  };
  await expectLine('ready');
  return {
    async ask(request) {
      child.stdin.write(`${JSON.stringify(request)}\n`);
      await expectLine(`done ${request.do}`);
    },
    async end() {
      child.stdin.end();
      const code = await new Promise<number | null>((resolve) =>
        child.exitCode !== null ? resolve(child.exitCode) : child.once('exit', resolve),
      );
      if (code !== 0) throw new Error(`the other process failed (exit ${code}): ${stderr}`);
    },
  };
}

/**
 * Resolves once the store's signal for `topic` has moved past `before`, checked as the watchers check it: on every
 * wake of the signal and on a 10 ms poll of its version (SQLite's only way). Never resolves when nothing moved.
 */
function heard(store: Store, topic: CommitTopic, before: number): Promise<void> {
  return new Promise((resolve) => {
    const check = () => {
      if (store.commits.version(topic) === before) return;
      stop();
      clearInterval(poll);
      resolve();
    };
    const stop = store.commits.onChange(topic, check);
    const poll = setInterval(check, 10);
  });
}

/**
 * On PostgreSQL, resolves once the store's LISTEN connection has made `n` connections and listens (a bounded poll of
 * its real state, every 10 ms): a commit made before would be found by the connection's re-read, not by a
 * notification, and the test would prove nothing about NOTIFY. SQLite's signal has no connection.
 */
async function listening(store: Store, n = 1): Promise<void> {
  if (!(store.commits instanceof PgCommitSignal)) return;
  store.commits.version('events'); // the first use opens it
  for (const until = Date.now() + 30_000; store.commits.connections < n;) {
    if (Date.now() > until) throw new Error(`the LISTEN connection made ${store.commits.connections} of ${n}`);
    await new Promise((resolve) => setTimeout(resolve, 10)); // the poll interval, not a wait for an outcome
  }
}

/** Resolves once `sessionId`'s log holds an update with `text`, checked now and at every wake of `watcher`. */
function streamSees(watcher: CommitWatcher, store: Store, sessionId: string, text: string): Promise<void> {
  return new Promise((resolve) => {
    const has = () =>
      store.readEvents(sessionId).some((e) => (e.data as { update?: { text?: string } }).update?.text === text);
    if (has()) return resolve();
    const stop = watcher.watch(sessionId, () => {
      if (!has()) return;
      stop();
      resolve();
    });
  });
}

const approval = (runId: string, sessionId: string): NewApproval => ({
  tenant: 'default',
  runId,
  sessionId,
  bindingId: 'b4',
  via: 'runner',
  effect: 'network',
  target: { kind: 'domain', value: 'api.example.com' },
  summary: 'fetch the docs',
  dataClass: null,
  destination: 'api.example.com',
  risk: { score: 40, level: 'medium', reasons: ['new destination'] },
  goalRevision: 0,
  groupId: null,
  requestedLifetime: 'once',
  createdAt: new Date().toISOString(),
  expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
});

for (const backend of [sqliteBackend(), postgresBackend()] as StoreBackend[]) {
  describe(`commits by others: ${backend.name}`, () => {
    let options: { dataDir: string; databaseUrl?: string };
    let store: Store;
    let other: OtherHost;
    const closing: (() => unknown)[] = [];
    beforeAll(async () => {
      options = backend.fresh();
      store = backend.open(options);
      other = await otherHost(options);
      await listening(store);
    });
    afterAll(async () => {
      for (const close of closing.splice(0)) close();
      await other.end();
      store.close();
      backend.close();
    });

    it("an event another process appends wakes this process's streams of its session", async () => {
      const { sessionId } = store.ensureSession('default', 'b1', 'c1');
      const watcher = new CommitWatcher(store, 20);
      const seen = streamSees(watcher, store, sessionId, 'from the other host');
      await other.ask({ do: 'event', sessionId, text: 'from the other host' });
      await seen;
      expect(watcher.stats()).toMatchObject({ sessions: 0, listening: false, polling: false });
    });

    it("a cancel another process requests reaches this process's run control watcher", async () => {
      const controls: RunControl[] = [];
      const heardCancel = new Promise<void>((resolve) => {
        const watcher = new RunControlWatcher(
          store,
          (control) => {
            controls.push(control);
            watcher.stop();
            resolve();
          },
          20,
        );
        watcher.start();
        closing.push(() => watcher.stop());
      });
      await other.ask({ do: 'cancel', runId: 'run_held_here' });
      await heardCancel;
      expect(controls).toEqual([
        expect.objectContaining({ runId: 'run_held_here', action: 'cancel', by: 'user:other' }),
      ]);
    });

    it("a claim another process releases wakes this process's waiting run, which then claims", async () => {
      const { sessionId } = store.ensureSession('default', 'b3', 'c3');
      for (const runId of ['run_first', 'run_second'])
        store.append(sessionId, [
          { type: 'run.queued', runId, data: { runner: 'echo', goalRevision: 0, attempt: 1, bindingId: 'b3' } },
        ]);
      const req = (runId: string) => ({ runId, sessionId, bindingId: 'b3', maxPerBinding: 1, maxTotal: 100 });
      expect(tryClaim(store, req('run_first'))).toEqual({ ok: true });
      expect(tryClaim(store, req('run_second'))).toMatchObject({ ok: false, by: 'session' });
      const signalled = heard(store, 'claims', store.commits.version('claims'));
      const claimed = new Promise<void>((resolve) => {
        const waker = new ClaimWaker(store, () => {
          if (!tryClaim(store, req('run_second')).ok) return;
          waker.close();
          resolve();
        });
        waker.start();
        closing.push(() => waker.close());
      });
      await other.ask({ do: 'end', sessionId, runId: 'run_first' });
      await signalled;
      await claimed;
      expect(store.run('run_first')?.status).toBe('completed');
      expect(claimedRunsTotal(store)).toBe(1);
    });

    it('an approval another process decides is heard, and listed as changed', async () => {
      const { sessionId } = store.ensureSession('default', 'b4', 'c4');
      const row = insertApproval(store, approval('run_asking', sessionId));
      const seq = lastApprovalChange(store);
      const signalled = heard(store, 'approvals', store.commits.version('approvals'));
      await other.ask({ do: 'approve', approvalId: row.id });
      await signalled;
      expect(approvalsChangedSince(store, seq)).toEqual([
        expect.objectContaining({ approvalId: row.id, runId: 'run_asking', status: 'approved' }),
      ]);
    });
  });
}

describe('commits by others: the LISTEN connection (PostgreSQL)', () => {
  const backend = postgresBackend();
  afterAll(() => backend.close());

  it("drops the notifications of the store's own connection, as data_version ignores its own commits", async () => {
    const options = backend.fresh();
    const store = backend.open(options);
    const other = await otherHost(options);
    try {
      await listening(store);
      const { sessionId } = store.ensureSession('default', 'b1', 'c1');
      const before = store.commits.version('events');
      store.append(sessionId, [
        {
          type: 'run.update',
          runId: 'run_own',
          data: { runnerSeq: 1, update: { kind: 'message.delta', text: 'own' } },
        },
      ]);
      // Notifications arrive in commit order: once the other's is heard, the own one would have been too.
      const watcher = new CommitWatcher(store, 20);
      const seen = streamSees(watcher, store, sessionId, 'sentinel');
      await other.ask({ do: 'event', sessionId, text: 'sentinel' });
      await seen;
      expect(store.commits.version('events') - before).toBe(1);
    } finally {
      await other.end();
      store.close();
    }
  });

  it('killed with pg_terminate_backend, it comes back, and what was committed meanwhile is not missed', async () => {
    const options = backend.fresh();
    const store = backend.open(options);
    // A second connection of this process: another backend, so its commits are others' (as another host's are).
    const writer = backend.open(options);
    const admin = new PgDb(options.databaseUrl!);
    const other = await otherHost(options);
    try {
      await listening(store);
      const { sessionId } = store.ensureSession('default', 'b1', 'c1');
      const watcher = new CommitWatcher(store, 20);
      const listeners = () =>
        admin
          .prepare(
            'SELECT pid FROM pg_stat_activity WHERE application_name = ? AND datname = current_database() ORDER BY pid',
          )
          .pluck()
          .all(LISTEN_APPLICATION_NAME) as number[];
      const [first] = listeners();
      expect(listeners()).toHaveLength(1); // only this store listens: the other process has no watcher
      const gap = streamSees(watcher, store, sessionId, 'committed while nobody listened');
      expect(admin.prepare('SELECT pg_terminate_backend(?)').pluck().get(first)).toBe(1);
      // Until the killed backend is gone, a synchronous poll: the event loop stays blocked, so the client can neither
      // notice nor reconnect, and the commit below is notified to nobody: only the re-read after reconnecting finds it.
      for (const until = Date.now() + 10_000; listeners().length > 0;)
        if (Date.now() > until) throw new Error('the killed LISTEN backend is still there after 10 s');
      writer.append(sessionId, [
        {
          type: 'run.update',
          runId: 'run_gap',
          data: { runnerSeq: 1, update: { kind: 'message.delta', text: 'committed while nobody listened' } },
        },
      ]);
      await gap;
      // It listens again, on a new backend, and hears the next commit by its notification.
      await listening(store, 2);
      expect(listeners()).toHaveLength(1);
      expect(listeners()[0]).not.toBe(first);
      const after = streamSees(watcher, store, sessionId, 'after the reconnection');
      await other.ask({ do: 'event', sessionId, text: 'after the reconnection' });
      await after;
    } finally {
      await other.end();
      admin.close();
      writer.close();
      store.close();
    }
  });
});
