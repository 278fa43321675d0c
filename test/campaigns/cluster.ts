// The cluster campaign (issue 17's checks): three real `paddock serve` hosts on one throwaway PostgreSQL cluster, each
// with its own data folder and a short lease. `--count` events over `--conversations` conversations are posted
// round-robin to the hosts (a host that is down gets its event redelivered to the next, as a platform retries), at
// most `--window` of them not yet ended; `--kills` times a random host is SIGKILLed while it runs a run and started
// again. Some sessions are followed by stream readers that hop between hosts with `Last-Event-ID`. Once every run
// ended, the log must show: every event received once and run at most once (completed, or interrupted by a kill —
// never silently run again), every run ended exactly once, gap-free seqs, each conversation's messages and runs in
// posted order with never two active runs, and without kills every run completed; every follower saw its session
// gap-free across its hops; the audit verifies (the real CLI); no runner process is left.
// Flags: --hosts, --conversations, --kills, --window, --followers, --lease-ms, --steps, --step-ms, --sandbox,
// --fsync on, --log-level (the hosts', kept in <dataDir>.log), --keep yes (the database and folders after a failure).
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { PgDb } from '../../host/state/pg/pgDb.js';
import { startPgCluster } from '../helpers/pgCluster.js';
import {
  conversationOrder,
  eachEventOnce,
  runOfMessage,
  startedAtMostOnce,
  type PostedOrder,
} from './cluster/checks.js';
import { killHost, newHost, PLATFORM, prepareCluster, startHost, stopHost, type ClusterHost } from './cluster/hosts.js';
import { postEvent, SessionFollower } from './cluster/traffic.js';
import { chatEvent } from '../helpers/host.js';
import { endedExactlyOnce, gapFreeSeq, noneRunning, type EventRow } from './fault/invariants.js';
import type { Campaign, CampaignArgs } from './lib/campaign.js';
import { processesMentioning } from './lib/processesMentioning.js';
import { intBetween, seededRandom } from './lib/random.js';
import type { Report } from './lib/report.js';

const REPO = new URL('../../', import.meta.url).pathname;

// The campaign watches the hosts from outside, through the database and their HTTP answers: its waits poll (10–100 ms),
// each bounded, and none decides a result — what the log holds at the end is judged. The random pauses around a kill
// are the campaign's input (where in a run the kill lands, how long the host stays down), drawn from the seed.
async function run(args: CampaignArgs, report: Report): Promise<void> {
  const flags = args.flags;
  const hostCount = Number(flags.hosts ?? 3);
  const conversations = Number(flags.conversations ?? Math.max(1, Math.round(args.count / 10)));
  const kills = Number(flags.kills ?? Math.round(args.count / 20));
  const window = Number(flags.window ?? 24);
  const followers = Math.min(conversations, Number(flags.followers ?? 6));
  const rand = seededRandom(args.seed);
  const pg = startPgCluster({ fsync: flags.fsync === 'on' });
  const setup = { databaseUrl: pg.url, leaseMs: Number(flags['lease-ms'] ?? 3_000), logLevel: flags['log-level'] };
  const db = new PgDb(pg.url);
  const hosts: ClusterHost[] = Array.from({ length: hostCount }, (_, i) => newHost(String.fromCharCode(65 + i)));
  const follows = new Map<string, SessionFollower>();
  let aborted = true;
  try {
    const token = prepareCluster(setup, {
      sandbox: flags.sandbox ?? 'process',
      steps: Number(flags.steps ?? 4),
      stepMs: Number(flags['step-ms'] ?? 60),
    });
    await Promise.all(hosts.map((h) => startHost(h, setup, (w) => report.note(w))));
    const hostIds = new Map(hosts.map((h) => [readFileSync(join(h.dataDir, 'host-id'), 'utf8').trim(), h.name]));
    const ended = () =>
      Number(db.prepare("SELECT count(*) FROM runs WHERE status NOT IN ('queued', 'running')").pluck().get());
    const posted = new Map<string, string[]>();
    let postedCount = 0;
    const started = performance.now();

    // The killer: `kills` times, spread over the posting, a random host while one of its runs is running.
    const killer = (async () => {
      for (let k = 0; k < kills && !args.stopped?.(); k++) {
        while (postedCount < ((k + 1) * args.count) / (kills + 1)) await sleep(20);
        const host = hosts[intBetween(rand, 0, hosts.length - 1)]!;
        const id = [...hostIds].find(([, name]) => name === host.name)![0];
        const running = () =>
          Number(db.prepare("SELECT count(*) FROM runs WHERE status = 'running' AND owner_host = ?").pluck().get(id)) >
          0;
        for (const until = Date.now() + 3_000; !running() && Date.now() < until;) await sleep(10);
        report.count(running() ? 'kills mid-run' : 'kills with no run running');
        await sleep(intBetween(rand, 0, 150)); // where in its run the kill lands
        host.held = true;
        await killHost(host);
        report.count('kills');
        await sleep(intBetween(rand, 0, 1_500)); // how long the host stays down (its lease may run out meanwhile)
        await startHost(host, setup, (w) => report.note(w));
        host.held = false;
      }
    })();

    // A host that ended by itself (a violation, counted at the end) is started again, as a service manager would.
    const revive = async () => {
      for (const h of hosts) if (!h.child && !h.held) await startHost(h, setup, (w) => report.note(w));
    };
    for (let i = 0; i < args.count && !args.stopped?.(); i++) {
      while (postedCount - ended() >= window) await sleep(20);
      await revive();
      const conversation = `conv-${args.seed}-${i % conversations}`;
      const id = `ev-${args.seed}-${i}`;
      const { ticket, tried } = await postEvent(
        hosts,
        token,
        chatEvent({ id, text: `m${i}`, platform: PLATFORM, bot: 'b', conversation: { id: conversation } }),
        i,
      );
      posted.set(conversation, [...(posted.get(conversation) ?? []), id]);
      postedCount += 1;
      report.count(`answers ${ticket.status}`);
      if (tried.length > 1) report.count('events redelivered to another host');
      if (follows.size < followers && !follows.has(ticket.sessionId))
        follows.set(ticket.sessionId, new SessionFollower(ticket.sessionId, hosts, token, seededRandom(i)));
    }
    await killer;

    // Converge: every run ends (a takeover's lease and a third, at most, after the last kill).
    const until = Date.now() + 120_000;
    while (Number(db.prepare("SELECT count(*) FROM runs WHERE status IN ('queued', 'running')").pluck().get()) > 0) {
      if (Date.now() > until) break;
      await sleep(100);
    }
    const seconds = (performance.now() - started) / 1000;
    report.total('events posted', postedCount);
    report.total('runs per second', Number((postedCount / seconds).toFixed(2)));

    const events = db.prepare('SELECT session_id, seq, type, run_id, data FROM events').all() as EventRow[];
    const runs = db.prepare('SELECT id, status, pid, pid_start FROM runs').all() as {
      id: string;
      status: string;
      pid: number | null;
      pid_start: number | null;
    }[];
    const problems = [
      ...noneRunning(runs),
      ...gapFreeSeq(events),
      ...endedExactlyOnce(runs, events),
      ...startedAtMostOnce(events),
      ...eachEventOnce(events, posted as PostedOrder),
      ...conversationOrder(events, posted as PostedOrder),
    ];
    const byStatus = new Map<string, number>();
    for (const r of runs) byStatus.set(r.status, (byStatus.get(r.status) ?? 0) + 1);
    for (const [status, n] of byStatus) report.total(`runs ${status}`, n);
    if (kills === 0 && (byStatus.get('completed') ?? 0) !== runs.length)
      problems.push(`without kills, ${runs.length - (byStatus.get('completed') ?? 0)} runs did not complete`);
    const paused = Number(db.prepare("SELECT count(*) FROM events WHERE type = 'session.paused'").pluck().get());
    report.total('sessions paused for a human', paused);
    report.total('host starts taken over by another', takeovers(db));
    for (const [host, name] of hostIds) report.note(`host ${name} = ${host}`);

    // Followers: each saw its session's stream gap-free (every seq of the log, once, in order) across its hops.
    for (const [sessionId, f] of follows) {
      const stored = () =>
        db.prepare('SELECT seq, type FROM events WHERE session_id = ? ORDER BY seq').all(sessionId) as {
          seq: number;
          type: string;
        }[];
      // It must reach the session's last run end (every run had ended before this point); what a run's teardown
      // appends after its end may still be coming, so the follower must be a gap-free prefix of the log reaching it.
      const due = stored()
        .filter((e) => e.type === 'run.ended' || e.type === 'run.interrupted')
        .reduce((last, e) => Math.max(last, e.seq), 0);
      for (const stop = Date.now() + 30_000; f.lastSeq < due && Date.now() < stop;) await sleep(50);
      await f.stop();
      const log = stored();
      const seqs = f.received.map((m) => m.seq);
      const prefix = log.slice(0, seqs.length).map((e) => e.seq);
      if (seqs.join() !== prefix.join() || f.lastSeq < due)
        problems.push(
          `follower of ${sessionId} saw seqs ${compress(seqs)}; the log has 1–${log.length}, its last run end ` +
            `is at ${due}`,
        );
      const types = new Map(log.map((e) => [e.seq, e.type]));
      const wrong = f.received.filter((m) => types.get(m.seq) !== m.type);
      if (wrong.length > 0)
        problems.push(`follower of ${sessionId}: ${wrong.length} messages of another type than stored`);
      report.count('follower reconnects', f.reconnects);
      report.count('follower messages', f.received.length);
      report.count('follower hosts', new Set(f.received.map((m) => m.host)).size);
    }

    // Clean stops (each drains and signs the chain's head with its own key), then the audit verifies from one of them.
    for (const h of hosts) {
      const code = await stopHost(h);
      if (code !== 0) problems.push(`host ${h.name} stopped with exit code ${code}:\n${h.stderr.slice(-3000)}`);
    }
    const verify = auditVerify(hosts[0]!, setup.databaseUrl);
    if (verify) problems.push(`audit verify: ${verify}`);
    for (const h of hosts)
      for (const exit of h.unexpectedExits) problems.push(`host ${h.name} ended by itself: ${exit}`);
    for (const h of hosts)
      for (const pid of processesMentioning(h.dataDir)) problems.push(`process ${pid} of host ${h.name} is left`);
    for (const p of problems) report.violation(args.seed, p);
    report.total('messages with a run', runOfMessage(events).size);
    aborted = false;
  } finally {
    for (const h of hosts)
      for (const exit of h.unexpectedExits) report.violation(args.seed, `host ${h.name} ended by itself: ${exit}`);
    for (const f of follows.values()) await f.stop();
    // Clean stops (a killed host would leave its runs' quota mounts in its folder until its next start).
    for (const h of hosts) await stopHost(h);
    db.close();
    if (flags.keep === 'yes' && (aborted || report.violations.length > 0))
      report.note(`PostgreSQL kept running for a look: ${pg.url} (stop: scripts/pg-cluster.sh stop ${pg.dir})`);
    else pg.stop();
    if (report.violations.length === 0 && !aborted)
      for (const h of hosts) {
        rmSync(h.dataDir, { recursive: true, force: true });
        rmSync(`${h.dataDir}.log`, { force: true });
      }
    else report.note(`data folders kept: ${hosts.map((h) => h.dataDir).join(' ')}`);
  }
}

/** Host starts another host took over (their lease ran out): one `cluster.host_taken_over` record each. */
function takeovers(db: PgDb): number {
  return Number(db.prepare("SELECT count(*) FROM audit WHERE type = 'cluster.host_taken_over'").pluck().get());
}

/** `paddock audit verify --json` from `host`'s folder; undefined when it passes, else what it said. */
function auditVerify(host: ClusterHost, databaseUrl: string): string | undefined {
  try {
    execFileSync(process.execPath, [join(REPO, 'bin/paddock.js'), 'audit', 'verify', '--json'], {
      env: { ...process.env, PADDOCK_HOME: host.dataDir, PADDOCK_DATABASE_URL: databaseUrl, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return undefined;
  } catch (error) {
    const e = error as { stdout?: Buffer; stderr?: Buffer };
    return `${String(e.stdout ?? '').slice(0, 2000)} ${String(e.stderr ?? '').slice(0, 2000)}`;
  }
}

/** `1-5,7,9-12`: a seq list, short. */
function compress(seqs: number[]): string {
  const parts: string[] = [];
  for (let i = 0; i < seqs.length;) {
    let j = i;
    while (j + 1 < seqs.length && seqs[j + 1] === seqs[j]! + 1) j++;
    parts.push(i === j ? String(seqs[i]) : `${seqs[i]}-${seqs[j]}`);
    i = j + 1;
  }
  return parts.join(',');
}

/** The cluster campaign. */
export const campaign: Campaign = {
  description: 'three paddock serve hosts on one PostgreSQL: events round-robin, random SIGKILLs, the log checked',
  smokeCount: 150,
  nightlyCount: 1_000,
  run,
};
