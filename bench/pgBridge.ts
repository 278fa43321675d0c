// Which way a synchronous store can reach PostgreSQL (docs/scale-out.md, "Sync or async"): the cost of one statement
// and of one 3-statement transaction, and how long each blocks the event loop, for better-sqlite3 (the baseline),
// node-postgres (async: the loop is free meanwhile), pg-native's querySync (libpq, blocking) and a worker thread owning
// a node-postgres client while the main thread blocks on Atomics.wait. Over the cluster's Unix socket, TCP loopback,
// and a TCP proxy that delays every server-to-client chunk by 1 ms ("a database 1 ms away").
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MessageChannel, receiveMessageOnPort, Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { startPgCluster } from '../test/helpers/pgCluster.js';
import { fmt, summarize } from './stats.js';

const require = createRequire(import.meta.url);

/** One candidate: a statement and a transaction, each synchronous or awaited. */
interface Candidate {
  name: string;
  one(): unknown;
  txn(session: string): unknown;
  close(): unknown;
}

const DDL = [
  'CREATE TABLE IF NOT EXISTS ev (session_id TEXT NOT NULL, seq INTEGER NOT NULL, data TEXT NOT NULL, ' +
    'PRIMARY KEY (session_id, seq))',
  'CREATE TABLE IF NOT EXISTS cnt (id TEXT PRIMARY KEY, n INTEGER NOT NULL)',
];
const NEXT = 'SELECT coalesce(max(seq), 0) + 1 AS n FROM ev WHERE session_id = $1';
const INSERT = 'INSERT INTO ev (session_id, seq, data) VALUES ($1, $2, $3)';
const BUMP = 'INSERT INTO cnt (id, n) VALUES ($1, 1) ON CONFLICT (id) DO UPDATE SET n = cnt.n + 1';
const DATA = JSON.stringify({ kind: 'message.delta', text: 'hello world' });

function sqlite(dir: string, synchronous: 'NORMAL' | 'FULL'): Candidate {
  const db = new Database(join(dir, `bench-${synchronous}.db`));
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${synchronous}`);
  for (const s of DDL) db.exec(s);
  const q = (s: string) => db.prepare(s.replace(/\$\d/g, '?'));
  const one = q('SELECT 1').pluck();
  const next = q(NEXT).pluck();
  const insert = q(INSERT);
  const bump = q(BUMP);
  const txn = db.transaction((session: string) => {
    const seq = next.get(session) as number;
    insert.run(session, seq, DATA);
    bump.run(session);
  });
  return { name: 'better-sqlite3', one: () => one.get(), txn: (s) => txn.immediate(s), close: () => db.close() };
}

function pgNative(url: string): Candidate {
  const Client = require('pg-native') as new () => {
    connectSync(url: string): void;
    querySync(text: string, values?: unknown[]): Record<string, unknown>[];
    prepareSync(name: string, text: string, n: number): void;
    executeSync(name: string, values: unknown[]): Record<string, unknown>[];
    end(cb?: () => void): void;
  };
  const c = new Client();
  c.connectSync(url);
  c.querySync('SET client_min_messages = warning'); // CREATE TABLE IF NOT EXISTS notices would go to stdout
  for (const s of DDL) c.querySync(s);
  c.prepareSync('one', 'SELECT 1', 0);
  c.prepareSync('next', NEXT, 1);
  c.prepareSync('insert', INSERT, 3);
  c.prepareSync('bump', BUMP, 1);
  return {
    name: 'pg-native querySync',
    one: () => c.executeSync('one', []),
    txn: (s) => {
      c.querySync('BEGIN');
      const seq = Number(c.executeSync('next', [s])[0]!.n);
      c.executeSync('insert', [s, seq, DATA]);
      c.executeSync('bump', [s]);
      c.querySync('COMMIT');
    },
    close: () => c.end(),
  };
}

// The worker: a node-postgres client answering one statement per message; the main thread waits on `flag`.
const WORKER = `
const { workerData } = require('node:worker_threads');
const { Client } = require(workerData.pg);
const { port, flag, url } = workerData;
const client = new Client({ connectionString: url });
const ready = client.connect();
port.on('message', async ({ text, values, name }) => {
  let answer;
  try { await ready; const r = await client.query({ text, values, name }); answer = { rows: r.rows }; }
  catch (error) { answer = { error: String(error) }; }
  port.postMessage(answer);
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
});`;

function workerBridge(url: string): Candidate {
  const { port1, port2 } = new MessageChannel();
  const flag = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(WORKER, {
    eval: true,
    workerData: { port: port2, flag, url, pg: require.resolve('pg') },
    transferList: [port2],
  });
  const q = (text: string, values: unknown[] = [], name?: string) => {
    Atomics.store(flag, 0, 0);
    port1.postMessage({ text, values, name });
    Atomics.wait(flag, 0, 0);
    const answer = receiveMessageOnPort(port1)!.message as { rows?: Record<string, unknown>[]; error?: string };
    if (answer.error) throw new Error(answer.error);
    return answer.rows!;
  };
  for (const s of DDL) q(s);
  return {
    name: 'worker + Atomics.wait',
    one: () => q('SELECT 1', [], 'one'),
    txn: (s) => {
      q('BEGIN');
      const seq = Number(q(NEXT, [s], 'next')[0]!.n);
      q(INSERT, [s, seq, DATA], 'insert');
      q(BUMP, [s], 'bump');
      q('COMMIT');
    },
    close: () => worker.terminate(),
  };
}

async function pgAsync(url: string): Promise<Candidate> {
  const { Client } = require('pg') as typeof import('pg');
  const c = new Client({ connectionString: url });
  await c.connect();
  for (const s of DDL) await c.query(s);
  return {
    name: 'node-postgres (async)',
    one: () => c.query({ text: 'SELECT 1', name: 'one' }),
    txn: async (s) => {
      await c.query('BEGIN');
      const seq = Number((await c.query<{ n: string }>({ text: NEXT, values: [s], name: 'next' })).rows[0]!.n);
      await c.query({ text: INSERT, values: [s, seq, DATA], name: 'insert' });
      await c.query({ text: BUMP, values: [s], name: 'bump' });
      await c.query('COMMIT');
    },
    close: () => c.end(),
  };
}

/** Per-call wall times in ms (for a synchronous candidate this is also how long the event loop was blocked). */
async function time(fn: () => unknown, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < Math.min(200, n); i++) await fn(); // warm-up
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn();
    out.push(performance.now() - t);
  }
  return out;
}

/** A TCP proxy in its own process that holds every server-to-client chunk `delayMs` before passing it on. */
export async function delayProxy(port: number, delayMs: number): Promise<{ port: number; stop(): void }> {
  const code = `
const net = require('node:net');
const server = net.createServer((c) => {
  const s = net.connect(${port}, '127.0.0.1');
  c.setNoDelay(true); s.setNoDelay(true);
  c.on('data', (d) => s.write(d));
  s.on('data', (d) => setTimeout(() => c.write(d), ${delayMs}));
  c.on('close', () => s.destroy()); s.on('close', () => c.destroy());
  c.on('error', () => {}); s.on('error', () => {});
});
server.listen(0, '127.0.0.1', () => process.stdout.write(String(server.address().port) + '\\n'));`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  const proxied = await new Promise<number>((resolve) => child.stdout.once('data', (d) => resolve(Number(d))));
  return { port: proxied, stop: () => child.kill() };
}

/** The figures of docs/scale-out.md "Sync or async" (run: npx tsx bench/run.ts pg-bridge). */
export async function pgBridgeBench(): Promise<Record<string, unknown>> {
  console.log('\n## PostgreSQL behind a synchronous store: statement and transaction cost, event-loop block');
  const dir = mkdtempSync(join(tmpdir(), 'paddock-bench-pgbridge-'));
  const tcpPort = 20_000 + (process.pid % 20_000);
  const cluster = await startPgCluster({ port: tcpPort, fsync: true });
  const proxy = await delayProxy(tcpPort, 1);
  const tcp = `postgresql://postgres@127.0.0.1:${tcpPort}/paddock`;
  const far = `postgresql://postgres@127.0.0.1:${proxy.port}/paddock`;
  const results: Record<string, unknown> = {};
  const n = Number(process.env.PADDOCK_BENCH_N ?? 2_000);
  const row = (label: string, one: number[], txn: number[]) => {
    const o = summarize(one);
    const t = summarize(txn);
    console.log(
      `${label.padEnd(52)} statement p50 ${fmt(o.median, 3)} p99 ${fmt(o.p99, 3)} ms | ` +
        `transaction p50 ${fmt(t.median, 3)} p99 ${fmt(t.p99, 3)} ms`,
    );
    results[label] = { statement: o, transaction: t };
  };
  try {
    const runs: [string, () => Candidate | Promise<Candidate>, number][] = [
      ['better-sqlite3 (file, WAL, NORMAL: the default)', () => sqlite(dir, 'NORMAL'), n],
      ['better-sqlite3 (file, WAL, FULL: fsync per commit)', () => sqlite(dir, 'FULL'), n],
      ['node-postgres async, Unix socket', () => pgAsync(cluster.url), n],
      ['pg-native querySync, Unix socket', () => pgNative(cluster.url), n],
      ['worker + Atomics.wait, Unix socket', () => workerBridge(cluster.url), n],
      ['node-postgres async, TCP loopback', () => pgAsync(tcp), n],
      ['pg-native querySync, TCP loopback', () => pgNative(tcp), n],
      ['worker + Atomics.wait, TCP loopback', () => workerBridge(tcp), n],
      ['pg-native querySync, TCP +1 ms proxy', () => pgNative(far), Math.ceil(n / 10)],
      ['worker + Atomics.wait, TCP +1 ms proxy', () => workerBridge(far), Math.ceil(n / 10)],
    ];
    for (const [label, make, count] of runs) {
      const c = await make();
      let i = 0;
      const one = await time(() => c.one(), count);
      const txn = await time(() => c.txn(`s${i++ % 100}`), count);
      row(label, one, txn);
      await c.close();
    }
    console.log(
      `method: ${n} calls each after 200 warm-up (a tenth through the proxy); a transaction is BEGIN, a max(seq) ` +
        `read, an insert, an upsert, COMMIT (5 round trips on PostgreSQL, one IMMEDIATE transaction on SQLite); ` +
        `PostgreSQL at its defaults (fsync and synchronous_commit on: each COMMIT waits for its WAL flush, as ` +
        `SQLite's FULL does; SQLite's NORMAL syncs at checkpoints only). For the synchronous ` +
        `candidates each call's wall time is the event loop's block.`,
    );
  } finally {
    proxy.stop();
    cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return results;
}
