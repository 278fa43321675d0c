import { existsSync, mkdirSync, mkdtempSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRunWorkspace, sweepWorkspaces } from '../../../host/runs/workspace.js';

describe('workspace retention', () => {
  it('removes expired workspaces of finished runs, keeps live and fresh ones, never follows links', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'paddock-ttl-'));
    const outside = mkdtempSync(join(tmpdir(), 'paddock-ttl-outside-'));
    writeFileSync(join(outside, 'keep.txt'), 'host file');
    const old = createRunWorkspace(dataDir, 'run_old-0000-0000');
    symlinkSync(outside, join(old.out, 'link'));
    const live = createRunWorkspace(dataDir, 'run_live-0000-0000');
    const fresh = createRunWorkspace(dataDir, 'run_fresh-000-0000');
    mkdirSync(join(dataDir, 'workspaces', 'not-a-run'));
    const past = new Date(Date.now() - 10 * 24 * 3600 * 1000);
    for (const ws of [old, live]) utimesSync(ws.root, past, past);
    const removed = sweepWorkspaces(dataDir, 7 * 24 * 3600 * 1000, new Set(['run_live-0000-0000']));
    expect(removed).toEqual(['run_old-0000-0000']);
    expect(existsSync(old.root)).toBe(false);
    expect(existsSync(live.root) && existsSync(fresh.root)).toBe(true);
    expect(existsSync(join(dataDir, 'workspaces', 'not-a-run'))).toBe(true);
    expect(existsSync(join(outside, 'keep.txt'))).toBe(true);
  });
});

describe('session folder retention', () => {
  it(
    'removes session folders unused past the TTL, keeps those of live sessions and recent ones, never follows ' +
      'links; a run refreshes its folder',
    async () => {
      const { sessionDir, sweepSessionFolders } = await import('../../../host/runs/workspace.js');
      const dataDir = mkdtempSync(join(tmpdir(), 'paddock-sttl-'));
      const outside = mkdtempSync(join(tmpdir(), 'paddock-sttl-outside-'));
      writeFileSync(join(outside, 'keep.txt'), 'host file');
      const id = (n: number) => `ses_00000000-0000-4000-8000-00000000000${n}`;
      const [old, live, used] = [1, 2, 3].map((n) => sessionDir(dataDir, id(n)));
      symlinkSync(outside, join(old!, 'link'));
      const past = new Date(Date.now() - 40 * 24 * 3600 * 1000);
      for (const dir of [old!, live!, used!]) utimesSync(dir, past, past);
      sessionDir(dataDir, id(3)); // the session ran again: its folder counts as used now
      const removed = sweepSessionFolders(dataDir, 30 * 24 * 3600 * 1000, new Set([id(2)]));
      expect(removed).toEqual([id(1)]);
      expect(existsSync(old!)).toBe(false);
      expect(existsSync(live!) && existsSync(used!)).toBe(true);
      expect(existsSync(join(outside, 'keep.txt'))).toBe(true);
      expect(() => sessionDir(dataDir, '../escape')).toThrow(/malformed session id/);
    },
  );
});
