import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HostError } from '../../host/errors.js';
import { Store } from '../../host/state/store.js';
import { textEvent } from '../../sdk/protocol/runParams.js';
import { storeConnection } from '../helpers/rawDb.js';

// A real full disk: a 2 MiB tmpfs this test mounts (the test machines and CI run as root; without the right to mount,
// this test fails loudly rather than skipping). The schema and the WAL take part of it: with 1 MiB, migration 19's
// table left room for only 5 batches before the disk was full.
const mountPoint = mkdtempSync(join(tmpdir(), 'paddock-full-'));
beforeAll(async () => {
  await execa('mount', ['-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', mountPoint]);
});
afterAll(async () => {
  await execa('umount', [mountPoint], { reject: false });
  rmSync(mountPoint, { recursive: true, force: true });
});

describe('state on a full disk', () => {
  it('fails with STATE_FULL, writes nothing half, and the committed history stays readable', async () => {
    const store = Store.open({ dataDir: join(mountPoint, 'data') });
    const { sessionId } = store.ensureSession('default', 'b', 'k');
    const big = 'x'.repeat(16 * 1024);
    let error: unknown;
    let committed = 0;
    try {
      for (let i = 0; i < 1_000; i++) {
        store.append(sessionId, [
          { type: 'message.received', data: { event: textEvent(`${i} ${big}`) } },
          { type: 'message.received', data: { event: textEvent(`${i} second half ${big}`) } },
        ]);
        committed += 1;
      }
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(HostError);
    expect((error as HostError).code).toBe('STATE_FULL');
    expect((error as HostError).message).toMatch(/is full; nothing of this change was written/);
    try {
      store.close();
    } catch {
      // Closing signs a checkpoint, which needs space too; the connection itself is closed all the same (an open
      // database file keeps the tmpfs busy: umount, then removing the folder, failed in CI).
      storeConnection(store).close();
    }
    // A new host on the same, still full, disk reads a consistent history: every committed batch
    // whole (two events each), seqs gap-free, nothing of the failed batch.
    const reopened = Store.open({ dataDir: join(mountPoint, 'data') });
    const events = reopened.readEvents(sessionId);
    expect(events.length).toBe(1 + committed * 2);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(committed).toBeGreaterThan(5);
    storeConnection(reopened).close();
  });
});
