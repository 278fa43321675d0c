import { readFileSync } from 'node:fs';
import { parseProcStat, readProcTable } from '../../sdk/process/procTable.js';

// The host's own process checks (moved out of the SDK: no runner needs them; a leaf under host/util
// so the state layer may use it): the survivor scan of
// a run's process group and session, and the start time that tells a live pid from a reused one
// (claims, recovery, model budgets).

/**
 * Live (non-zombie) processes in process group `pgid` or session `sid`. Zombies are excluded on
 * purpose: `kill(-pgid, 0)` counts them, and an init that reaps slowly keeps them for seconds.
 */
export function liveGroupMembers(pgid: number, sid: number = pgid): number[] {
  return readProcTable()
    .filter((p) => p.state !== 'Z' && (p.pgrp === pgid || p.session === sid))
    .map((p) => p.pid);
}

/** Start time (clock ticks after boot) of a live process, or null when it is gone or a zombie. */
export function processStartTime(pid: number): number | null {
  try {
    const entry = parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    return entry && entry.state !== 'Z' ? entry.startTime : null;
  } catch {
    return null;
  }
}
