// Runs per second with 1, 2 and 3 `paddock serve` hosts on one PostgreSQL (issue 17), on this machine: the cluster
// campaign (test/campaigns/cluster.ts) without kills, each host count in turn with the same events — `count` events
// round-robin over the hosts, over `conversations` conversations, at most `window` not yet ended, each run a real
// runner process streaming 4 updates 60 ms apart (about 0.3 s of a run is waiting). All hosts share this machine's
// cores, so the gain a host adds is bounded by them: what is measured is what a second and third host add here.
import { execFileSync } from 'node:child_process';
import { fmt } from './stats.js';

const REPO = new URL('../', import.meta.url).pathname;

/** Runs per second of one campaign run with `hosts` hosts; throws on a violation (a figure of a wrong run is none). */
function runsPerSecond(hosts: number, count: number, conversations: number, window: number): number {
  const out = execFileSync(
    process.execPath,
    [
      '--import',
      'tsx',
      'test/campaigns/run.ts',
      'cluster',
      ...['--count', String(count), '--hosts', String(hosts), '--kills', '0', '--followers', '0'],
      ...['--conversations', String(conversations), '--window', String(window), '--seed', '1'],
    ],
    { cwd: REPO, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024 },
  );
  if (!/## cluster: PASS/.test(out)) throw new Error(`the campaign did not pass with ${hosts} host(s):\n${out}`);
  return Number(/runs per second: ([\d.]+)/.exec(out)![1]);
}

/** The figures of docs/benchmarks.md "Runs per second with 1, 2 and 3 hosts" (npx tsx bench/run.ts cluster-hosts). */
export async function clusterHostsBench(): Promise<Record<string, unknown>> {
  console.log('\n## Runs per second with 1, 2 and 3 hosts on one PostgreSQL (this machine)');
  const count = Number(process.env.PADDOCK_BENCH_CLUSTER_COUNT ?? 240);
  const conversations = 48;
  const window = 48;
  const results: Record<string, number> = {};
  for (const hosts of [1, 2, 3]) {
    results[`${hosts}`] = runsPerSecond(hosts, count, conversations, window);
    console.log(
      `${hosts} host(s): ${fmt(results[`${hosts}`]!, 2)} runs/s (${fmt(results[`${hosts}`]! / results['1']!, 2)}× ` +
        'one host)',
    );
  }
  console.log(
    `method: ${count} events over ${conversations} conversations, at most ${window} not yet ended, posted ` +
      'round-robin to the hosts; runs/s = events / seconds from the first post to the last run end; each host its ' +
      "default 4 concurrent runs, process sandbox, a 3 s lease; the campaign's checks pass for every figure " +
      '(each event run once, in order). Baseline: one host, same run.',
  );
  return results;
}
