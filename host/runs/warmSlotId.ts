/**
 * A warm slot's id (docs/warm-pool.md): run-shaped, so it names the slot's workspace, quota image, cgroup and
 * `PADDOCK_RUN_ID` as a run id would, and it names the host process that owns the slot (its pid and start time).
 * Slots are not in the store, so that is how another process's start-up sweeps (a CLI command, a second host) tell a
 * live slot's folder, image and mount from what a dead host left: an outside attack found them unmounting live ones.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { processStartTime } from '../util/procIdentity.js';

const SLOT_ID = /^run_w(\d{1,10})-(\d{1,16})-[0-9a-f-]{36}$/;

/** A new slot id owned by this process. */
export function newSlotId(): string {
  return `run_w${process.pid}-${processStartTime(process.pid) ?? 0}-${randomUUID()}`;
}

/** Whether `id` is shaped as a warm slot's id. */
export function isSlotId(id: string): boolean {
  return SLOT_ID.test(id);
}

/** Whether `id` is a warm slot's whose owning host process is still running (same pid and start time). */
export function slotOwnerAlive(id: string): boolean {
  const match = SLOT_ID.exec(id);
  if (!match) return false;
  const start = processStartTime(Number(match[1]));
  return start !== null && start === Number(match[2]);
}

/** The ids of live warm slots that have a workspace or a quota image in `dataDir` (any host process's). */
export function liveSlotIds(dataDir: string): string[] {
  const ids = new Set<string>();
  for (const dir of [join(dataDir, 'workspaces'), join(dataDir, 'quota', 'workspaces')]) {
    if (!existsSync(dir)) continue;
    for (const name of readdirSync(dir)) {
      const id = name.replace(/\.img$/, '');
      if (id.startsWith('run_w') && slotOwnerAlive(id)) ids.add(id);
    }
  }
  return [...ids];
}
