// What the soak samples of a long-lived `paddock serve` and its data folder, read from /proc and /sys: the host's
// open fds, RSS, zombie and live children, the runs' cgroup folders, workspaces and mounts.
import { readFileSync, readdirSync, readlinkSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * One sample; `heapLive`, `heapUsed`, `heapTotal` and `external` come from the host's own /metrics
 * (paddock_heap_live_bytes: the heap in use right after the last major collection; nodejs_heap_size_used_bytes,
 * garbage included; nodejs_heap_size_total_bytes; nodejs_external_memory_bytes), `rssAnonKiB` is the anonymous part
 * of its RSS (/proc/<pid>/smaps_rollup: malloc, V8's heap; not the shared mapped binary and libraries), `brkKiB`
 * the resident part of its brk heap (the `[heap]` mapping: glibc's main malloc arena, where SQLite's page cache and
 * Node's native allocations of the main thread live; the rest of `rssAnonKiB` is mostly V8's heap). `youngGen` is
 * V8's new space (nodejs_heap_space_size_total_bytes{space="new"}), and the two `…BeyondYoungKiB` figures are RSS
 * and anonymous RSS without it: the young generation is V8's allocation buffer, grown from 1 MB up to its cap of
 * 32 MB when enough survives its scavenges, and shrunk again when little does (docs/benchmarks.md, "Soak, fifth
 * attempt").
 */
export interface Sample {
  runs: number;
  fds: number;
  rssKiB: number;
  rssAnonKiB: number;
  brkKiB: number;
  heapLive: number;
  heapUsed: number;
  heapTotal: number;
  youngGen: number;
  rssBeyondYoungKiB: number;
  rssAnonBeyondYoungKiB: number;
  external: number;
  zombies: number;
  children: number;
  cgroups: number;
  workspaces: number;
  mounts: number;
  dbBytes: number;
}

/** Entries of a folder, none if it is not there. */
function entries(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** Children of `pid` (by /proc/<child>/stat's ppid), split into zombies and live ones. */
function childrenOf(pid: number): { zombies: number; live: number } {
  let zombies = 0;
  let live = 0;
  for (const name of entries('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue;
    }
    const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(ppid) !== pid) continue;
    if (state === 'Z') zombies++;
    else live++;
  }
  return { zombies, live };
}

/** The resident KiB of `pid`'s brk heap (its `[heap]` mapping in /proc/<pid>/smaps), 0 if it has none. */
function brkResidentKiB(pid: number): number {
  let inHeap = false;
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    if (/^[0-9a-f]+-[0-9a-f]+ /.test(line)) inHeap = line.endsWith(' [heap]');
    else if (inHeap && line.startsWith('Rss:')) return Number(/\d+/.exec(line)?.[0] ?? 0);
  }
  return 0;
}

/** Where run cgroups live (cgroup v2, or v1's unified, memory and pids hierarchies). */
const CGROUP_ROOTS = ['/sys/fs/cgroup/paddock', '/sys/fs/cgroup/unified/paddock']
  .concat(['/sys/fs/cgroup/memory/paddock', '/sys/fs/cgroup/pids/paddock'])
  .filter((d) => entries(d).length > 0);

/**
 * Samples the host `pid` serving `dataDir`, whose runs so far are `runIds` (heap figures, and the RSS figures that
 * need the young generation's size: filled in after, by HTTP, with {@link withHeapFigures}).
 */
export function sample(pid: number, dataDir: string, runIds: ReadonlySet<string>, runs: number): Sample {
  const kids = childrenOf(pid);
  const rss = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  const anon = /^Anonymous:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
  return {
    runs,
    fds: entries(`/proc/${pid}/fd`).length,
    rssKiB: Number(rss?.[1] ?? 0),
    rssAnonKiB: Number(anon?.[1] ?? 0),
    brkKiB: brkResidentKiB(pid),
    heapLive: 0,
    heapUsed: 0,
    heapTotal: 0,
    youngGen: 0,
    rssBeyondYoungKiB: 0,
    rssAnonBeyondYoungKiB: 0,
    external: 0,
    zombies: kids.zombies,
    children: kids.live,
    cgroups: CGROUP_ROOTS.reduce((n, root) => n + entries(root).filter((e) => runIds.has(e)).length, 0),
    workspaces: entries(join(dataDir, 'workspaces')).length + entries(join(dataDir, 'quota', 'workspaces')).length,
    mounts: readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .filter((l) => l.includes(`${dataDir}/`)).length,
    dbBytes: statSync(join(dataDir, 'paddock.db')).size,
  };
}

/** What each open fd of `pid` points at (`socket:[…]`, a path…), sorted: printed when the fd count moves. */
export function fdTargets(pid: number): string[] {
  return entries(`/proc/${pid}/fd`)
    .map((fd) => {
      try {
        return readlinkSync(`/proc/${pid}/fd/${fd}`).replace(/\[\d+\]$/, '');
      } catch {
        return 'gone';
      }
    })
    .sort();
}

/** `s` with the host's heap figures (serveHost.ts, heapFigures) and the RSS figures that need them. */
export function withHeapFigures(
  s: Sample,
  heap: Pick<Sample, 'heapLive' | 'heapUsed' | 'heapTotal' | 'youngGen' | 'external'>,
): Sample {
  const youngKiB = Math.round(heap.youngGen / 1024);
  return {
    ...s,
    ...heap,
    rssBeyondYoungKiB: s.rssKiB - youngKiB,
    rssAnonBeyondYoungKiB: s.rssAnonKiB - youngKiB,
  };
}
