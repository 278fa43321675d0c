/** The fence on a host's writes about its runs (docs/scale-out.md §4; decision CL2). */
import { HostError } from '../errors.js';
import type { HostLease } from './hostLeases.js';
import { dbOf, type Store } from './store.js';

/**
 * From now on `store` queues runs owned by `lease`, and refuses (`LEASE_LOST`), inside the writing transaction, every
 * write only a run's owner makes (`RUN_OWNER_EVENT_TYPES`: start, stream, end, …; and a claim) when this host's row
 * was taken over, or when the run belongs to another (host, epoch). A lease that ran out but that nobody took over yet
 * still writes: every write transaction is serialised with a takeover (the writer lock, PG2), so such a write either
 * commits before the takeover — which then sees it, e.g. a run already ended — or is refused after it.
 */
export function fenceRunWrites(store: Store, lease: HostLease): void {
  const db = dbOf(store);
  const hostRow = db.prepare(
    'SELECT dead_at AS deadAt, taken_over_by AS takenOverBy FROM hosts WHERE host_id = ? AND epoch = ?',
  );
  const owner = db.prepare('SELECT owner_host AS ownerHost, owner_epoch AS ownerEpoch FROM runs WHERE id = ?');
  const me = `host ${lease.hostId} (epoch ${lease.epoch})`;
  store.fenceRuns(lease, (runIds) => {
    const row = hostRow.get(lease.hostId, lease.epoch) as
      { deadAt: string | null; takenOverBy: string | null } | undefined;
    if (!row || row.deadAt !== null)
      throw new HostError(
        'LEASE_LOST',
        `${me} lost its lease: ` +
          (row ? `host ${row.takenOverBy ?? '?'} took its runs over at ${row.deadAt}` : 'it holds none'),
        { runIds: [...runIds], takenOverBy: row?.takenOverBy ?? null },
      );
    for (const runId of runIds) {
      const run = owner.get(runId) as { ownerHost: string | null; ownerEpoch: number | null } | undefined;
      // A run queued by a process without a lease has no owner: nothing to fence (SQLite, runs before version 17).
      if (!run || run.ownerHost === null) continue;
      if (run.ownerHost !== lease.hostId || run.ownerEpoch !== lease.epoch)
        throw new HostError(
          'LEASE_LOST',
          `${me} does not own run ${runId}: host ${run.ownerHost} (epoch ${run.ownerEpoch}) does`,
          { runIds: [runId], owner: { hostId: run.ownerHost, epoch: run.ownerEpoch } },
        );
    }
  });
}
