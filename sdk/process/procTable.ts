import { readdirSync, readFileSync } from 'node:fs';

/** One process as /proc/<pid>/stat describes it. */
export interface ProcEntry {
  pid: number;
  ppid: number;
  pgrp: number;
  session: number;
  /** R, S, D, Z (zombie), T, … */
  state: string;
  /** Start time in clock ticks after boot: with the pid, identifies a process across pid reuse. */
  startTime: number;
}

/** Parse the text of /proc/<pid>/stat. The command name may hold spaces and parentheses. */
export function parseProcStat(text: string): ProcEntry | undefined {
  const close = text.lastIndexOf(')');
  if (close === -1) return undefined;
  const pid = Number.parseInt(text, 10);
  const fields = text.slice(close + 2).split(' ');
  const [state, ppid, pgrp, session] = fields;
  if (!state || ppid === undefined || pgrp === undefined || session === undefined) return undefined;
  // Field 22 of stat (starttime) is the 20th after the command name.
  return {
    pid,
    ppid: Number(ppid),
    pgrp: Number(pgrp),
    session: Number(session),
    state,
    startTime: Number(fields[19] ?? 0),
  };
}

/** Snapshot of every process visible in /proc (processes that vanish mid-scan are skipped). */
export function readProcTable(): ProcEntry[] {
  const entries: ProcEntry[] = [];
  for (const name of readdirSync('/proc')) {
    const first = name.charCodeAt(0);
    if (first < 48 || first > 57) continue;
    try {
      const entry = parseProcStat(readFileSync(`/proc/${name}/stat`, 'utf8'));
      if (entry) entries.push(entry);
    } catch {
      // The process exited between readdir and read.
    }
  }
  return entries;
}

/** Live (non-zombie) descendants of `pid`, found through the parent links in one snapshot. */
export function liveDescendants(pid: number, table: ProcEntry[] = readProcTable()): number[] {
  const children = new Map<number, ProcEntry[]>();
  for (const p of table) {
    const list = children.get(p.ppid);
    if (list) list.push(p);
    else children.set(p.ppid, [p]);
  }
  const out: number[] = [];
  const stack = [pid];
  while (stack.length > 0) {
    const parent = stack.pop()!;
    for (const child of children.get(parent) ?? []) {
      if (child.state !== 'Z') out.push(child.pid);
      stack.push(child.pid);
    }
  }
  return out;
}

/**
 * Whether `pid` names one process this process may signal on its own: not init (1), not itself, and a positive whole
 * number — kill(0) signals the caller's own process group and kill(-1) every process it may signal, so a pid read as
 * `0` (a `cgroup.procs` member outside this pid namespace) or garbage must never reach kill(2).
 */
export function signalablePid(pid: number): boolean {
  return Number.isSafeInteger(pid) && pid > 1 && pid !== process.pid;
}

/**
 * Whether the process group `pgid` may be signalled as a group (kill(-pgid)): {@link signalablePid}, and not this
 * process's own group (a pid read wrongly must not take the caller down with it).
 */
export function signalableGroup(pgid: number): boolean {
  if (!signalablePid(pgid)) return false;
  try {
    return parseProcStat(readFileSync('/proc/self/stat', 'utf8'))?.pgrp !== pgid;
  } catch {
    return false; // no /proc: this process's group cannot be told apart
  }
}

/** Send `signal` to each pid, ignoring processes that are already gone and pids never to be signalled. */
export function signalEach(pids: Iterable<number>, signal: NodeJS.Signals): void {
  for (const pid of pids) {
    // The one gate of every pid list the host signals (cgroup members, /proc scans, process trees).
    if (!signalablePid(pid)) continue;
    try {
      process.kill(pid, signal);
    } catch {
      // ESRCH: already gone.
    }
  }
}

/** How often /proc is rescanned while waiting for processes to die. */
const POLL_MS = 20;

/**
 * Poll `alive()` (a /proc scan) until it returns no pids or `timeoutMs` passes; resolves with the
 * pids still alive. Polls because there is no event for the death of a process that is not our
 * child; the wait is always bounded.
 */
export async function waitUntilGone(alive: () => number[], timeoutMs: number): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = alive();
    if (left.length === 0 || Date.now() >= deadline) return left;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** The pids of `pids` that are still alive (present in /proc and not zombies). */
export function stillAlive(pids: Iterable<number>): number[] {
  const live = new Set(
    readProcTable()
      .filter((p) => p.state !== 'Z')
      .map((p) => p.pid),
  );
  return [...pids].filter((pid) => live.has(pid));
}
