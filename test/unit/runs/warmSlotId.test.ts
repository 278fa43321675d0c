import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { liveSlotIds, newSlotId, slotOwnerAlive } from '../../../host/runs/warmSlotId.js';
import { processStartTime } from '../../../host/util/procIdentity.js';

describe('warm slot ids', () => {
  it('name their owning process: live while it runs, not for another start time or a run id', () => {
    const id = newSlotId();
    expect(id).toMatch(/^run_[A-Za-z0-9-]{8,64}$/); // still a run-shaped id (workspace, image and cgroup names)
    expect(slotOwnerAlive(id)).toBe(true);
    const start = processStartTime(process.pid)!;
    expect(slotOwnerAlive(id.replace(`-${start}-`, `-${start + 1}-`))).toBe(false); // a reused pid
    expect(slotOwnerAlive(id.replace(`w${process.pid}-`, 'w999999999-'))).toBe(false);
    expect(slotOwnerAlive('run_0123456789abcdef')).toBe(false);
  });

  it("lists the live slots of a data folder's workspaces and quota images, not a dead host's", () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'paddock-slots-'));
    const live = newSlotId();
    const dead = live.replace(`w${process.pid}-`, 'w999999999-');
    mkdirSync(join(dataDir, 'workspaces', live), { recursive: true });
    mkdirSync(join(dataDir, 'workspaces', dead), { recursive: true });
    mkdirSync(join(dataDir, 'quota', 'workspaces'), { recursive: true });
    writeFileSync(join(dataDir, 'quota', 'workspaces', `${live}.img`), '');
    writeFileSync(join(dataDir, 'quota', 'workspaces', `${dead}.img`), '');
    expect(liveSlotIds(dataDir)).toEqual([live]);
    rmSync(dataDir, { recursive: true, force: true });
  });
});
