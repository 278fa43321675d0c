import { existsSync, lstatSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/** The per-run unix sockets of a run: its egress proxy's and (sandboxed) its gateway's. */
export type RunSocketKind = 'egress' | 'gateway';

/** A run's socket file name: `<runId>.sock` (egress proxy) or `<runId>.gateway.sock` (gateway). */
const RUN_SOCKET = /^(run_[A-Za-z0-9-]{8,64})(?:\.gateway)?\.sock$/;

/** Where a run's socket of `kind` lives: `<data>/sockets/` (docs/run-pipeline.md, "provision and release"). */
export function runSocketPath(dataDir: string, runId: string, kind: RunSocketKind): string {
  return join(dataDir, 'sockets', kind === 'egress' ? `${runId}.sock` : `${runId}.gateway.sock`);
}

/**
 * Remove the run sockets (and FIFOs) under `<data>/sockets/` that a killed host left, of runs `isOver` says have
 * ended (other hosts on this data folder keep theirs). Only sockets and FIFOs named like a run's are removed: never a
 * link (not followed either), a folder or a regular file. Returns the removed file names.
 */
export function sweepRunSockets(dataDir: string, isOver: (runId: string) => boolean): string[] {
  const dir = join(dataDir, 'sockets');
  if (!existsSync(dir)) return [];
  const removed: string[] = [];
  for (const name of readdirSync(dir)) {
    const runId = RUN_SOCKET.exec(name)?.[1];
    if (!runId || !isOver(runId)) continue;
    const path = join(dir, name);
    const stat = lstatSync(path, { throwIfNoEntry: false });
    if (!stat || !(stat.isSocket() || stat.isFIFO())) continue;
    rmSync(path, { force: true });
    removed.push(name);
  }
  return removed;
}
