// Abuse campaign (issue 16): a fork bomb, a memory hog, an output flood, a SIGTERM-ignorer and a setsid escapee, each
// beside a normal run, under each sandbox backend this machine has: containment time, and the normal run's latency
// with and without the abusive neighbour. `npm run campaign abuse [--count N normal runs per phase]`.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Backend } from '../../host/sandbox/backend.js';
import { probeMachine } from '../../host/sandbox/probe.js';
import { abuseHost, type AbuseHost } from './abuse/host.js';
import { checkAbusive, checkNormal, percentile } from './abuse/check.js';
import { ABUSES, type AbuseKind } from './abuse/kinds.js';
import type { Campaign } from './lib/campaign.js';
import { processesMentioning } from './lib/processesMentioning.js';
import { seededRandom } from './lib/random.js';
import type { Report } from './lib/report.js';

export const campaign: Campaign = {
  description: 'abuse: fork bomb, memory hog, flood, SIGTERM-ignorer, setsid escapee beside a normal run',
  smokeCount: 5,
  nightlyCount: 30,
  async run({ seed, count, flags, stopped = () => false }, report) {
    const machine = probeMachine();
    const cgroups = Boolean(machine.cgroups.memory && machine.cgroups.pids);
    const backends: Backend[] = machine.bwrap.available ? ['process', 'bwrap'] : ['process'];
    report.total('backends', backends.join(', '));
    report.total(
      'cgroup limits',
      cgroups ? `memory: ${machine.cgroups.memory}; pids: ${machine.cgroups.pids}` : 'none',
    );
    const only = flags.only?.split(',');
    // The seed orders the abuses (a drift in machine load then falls on a different abuse each night).
    const rand = seededRandom(seed);
    const order = [...ABUSES].filter((a) => !only || only.includes(a.kind)).sort(() => rand() - 0.5);
    const root = mkdtempSync(join(tmpdir(), 'paddock-campaign-abuse-'));
    // bwrap runs are another uid on the host (the run identity): it must be able to reach the data folder.
    chmodSync(root, 0o755);
    const host = abuseHost(join(root, 'data'));
    let n = 0;
    try {
      for (const backend of backends) {
        for (const abuse of order) {
          if (stopped()) return;
          if (abuse.needsCgroups && !cgroups) {
            report.note(`${backend} ${abuse.kind}: skipped (no cgroup memory and pids limits on this machine)`);
            continue;
          }
          const tag = `${backend} ${abuse.kind}`;
          const alone = await normalRuns(host, backend, count, report, seed, 'alone');
          const beside = await besideAbuse(host, backend, abuse, count, report, seed, `abuse-${seed}-${++n}`);
          const p = (v: number[], q: number) => Math.round(percentile(v, q));
          report.total(`${tag}: normal p50/p99 alone ms`, `${p(alone, 50)} / ${p(alone, 99)}`);
          report.total(`${tag}: normal p50/p99 beside ms`, `${p(beside.latencies, 50)} / ${p(beside.latencies, 99)}`);
          report.total(
            `${tag}: p99 ratio beside/alone`,
            (percentile(beside.latencies, 99) / percentile(alone, 99)).toFixed(2),
          );
          report.total(
            `${tag}: containment ms median/max (${beside.containment.length} runs)`,
            `${p(beside.containment, 50)} / ${p(beside.containment, 100)}`,
          );
          report.total(`${tag}: ended`, beside.statuses.join(', '));
          report.total(`${tag}: limits that acted`, beside.limits.join(', ') || 'none');
        }
      }
    } finally {
      await host.gateway.close();
      host.store.close();
      rmSync(root, { recursive: true, force: true });
    }
  },
};

/** `count` normal runs one after another; their latencies (ms, dispatch to outcome). */
async function normalRuns(
  host: AbuseHost,
  backend: Backend,
  count: number,
  report: Report,
  seed: number,
  beside: string,
): Promise<number[]> {
  const latencies: number[] = [];
  for (let i = 0; i < count; i++) {
    const t = performance.now();
    const outcome = await host.run('echo', backend);
    latencies.push(performance.now() - t);
    report.count('normal runs');
    for (const problem of checkNormal(outcome, `${beside} (${backend})`)) report.violation(seed, problem);
  }
  return latencies;
}

/**
 * Abusive runs back to back (so that the neighbour always has one) while `count` normal runs are measured; each
 * abusive run checked, and its containment time taken from the host hearing 'abuse started' to the run's end.
 */
async function besideAbuse(
  host: AbuseHost,
  backend: Backend,
  abuse: AbuseKind,
  count: number,
  report: Report,
  seed: number,
  marker: string,
) {
  let stop = false;
  const containment: number[] = [];
  const statuses: string[] = [];
  const limits = new Set<string>();
  let firstStarted!: () => void;
  const started = new Promise<void>((resolve) => (firstStarted = resolve));
  const loop = (async () => {
    while (!stop) {
      const cancel = new AbortController();
      let at: number | undefined;
      let limited = !abuse.needsCgroups;
      const outcome = await host.run('abuser', backend, {
        config: { kind: abuse.kind, marker },
        signal: cancel.signal,
        onIsolation: (enforced) => {
          // The fork bomb and the hog run only with the cgroup's memory and process limits in place for this run.
          limited ||= enforced.some((e) => e.startsWith('memory ≤')) && enforced.some((e) => e.startsWith('at most'));
          if (!limited) cancel.abort(new Error('no cgroup limits for this run: not started'));
        },
        onStarted: () => {
          at = performance.now();
          firstStarted();
          if (abuse.cancelAtStart) cancel.abort(new Error('abuse campaign: cancel'));
        },
      });
      const containmentMs = at === undefined ? undefined : performance.now() - at;
      if (!limited) {
        report.violation(seed, `${backend} ${abuse.kind}: the run had no cgroup limits; the abuse was not run`);
        firstStarted();
        return;
      }
      if (containmentMs !== undefined) containment.push(containmentMs);
      statuses.push(outcome.status);
      for (const limit of outcome.limits ?? []) limits.add(limit);
      report.count('abusive runs');
      const run = { outcome, containmentMs, leftovers: processesMentioning(marker) };
      for (const problem of checkAbusive(abuse, run)) report.violation(seed, `${backend}: ${problem}`);
      if (containmentMs === undefined) firstStarted();
    }
  })();
  await started;
  const latencies = await normalRuns(host, backend, count, report, seed, `beside ${abuse.kind}`);
  stop = true;
  await loop;
  return { latencies, containment, statuses: [...new Set(statuses)], limits: [...limits] };
}
