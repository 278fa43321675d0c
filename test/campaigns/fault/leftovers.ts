// What a run may leave behind on the machine once its host has recovered: live runner processes (its recorded pid
// with the same start time, or any process whose environment holds its PADDOCK_RUN_ID) and its cgroup folders.
// Read straight from /proc and /sys, not through the host's own process code (that code is what is checked).
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { EventRow, RunRow } from './invariants.js';

/** Start time (field 22 of /proc/<pid>/stat) of a live, non-zombie process, or null. */
function startTime(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[0] === 'Z' ? null : Number(fields[19]);
  } catch {
    return null;
  }
}

/** Live processes (pid → run id) whose initial environment names one of `runIds`. */
function processesOfRuns(runIds: ReadonlySet<string>): Map<number, string> {
  const found = new Map<number, string>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let env: string;
    try {
      env = readFileSync(`/proc/${name}/environ`, 'latin1');
    } catch {
      continue; // gone meanwhile, or a kernel thread
    }
    const m = /(?:^|\0)PADDOCK_RUN_ID=([^\0]+)/.exec(env);
    if (m && runIds.has(m[1]!) && startTime(Number(name)) !== null) found.set(Number(name), m[1]!);
  }
  return found;
}

/** Entries of a folder, none if it is not there. */
function entries(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/**
 * Workspaces (folders or quota images) of these ended runs still in their data folder `dataDir`, with each run's
 * status. Recovery unmounts an interrupted run's quota image but does not remove its workspace: reported by the
 * campaign as a finding, apart from the violations.
 */
export function workspaceLeftovers(runs: readonly RunRow[], dataDir: string): string[] {
  const status = (name: string) => runs.find((r) => name.startsWith(r.id))?.status ?? 'unknown';
  return [
    ...entries(join(dataDir, 'workspaces')).map((n) => `workspace folder of ${status(n)} run ${n}`),
    ...entries(join(dataDir, 'quota', 'workspaces')).map((n) => `workspace image of ${status(n)} run ${n}`),
  ];
}

/**
 * Sentences for every runner process, cgroup folder or workspace mount of these runs still on the machine
 * (`dataDir`: their data folder). Only for a state where every run has ended.
 */
export function runnerLeftovers(runs: readonly RunRow[], events: readonly EventRow[], dataDir: string): string[] {
  const out: string[] = [];
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n'))
    if (line.includes(`${dataDir}/workspaces/`)) out.push(`a workspace is still mounted: ${line}`);
  for (const r of runs)
    if (r.pid !== null && r.pid_start !== null && startTime(r.pid) === r.pid_start)
      out.push(`runner pid ${r.pid} of ${r.status} run ${r.id} is still alive`);
  for (const [pid, runId] of processesOfRuns(new Set(runs.map((r) => r.id))))
    out.push(`process ${pid} of run ${runId} is still alive`);
  for (const e of events) {
    if (e.type !== 'run.started') continue;
    for (const dir of ((JSON.parse(e.data) as { cgroups?: string[] }).cgroups ?? []).filter((d) => existsSync(d)))
      out.push(`cgroup ${dir} of run ${e.run_id} is still there`);
  }
  return out;
}
