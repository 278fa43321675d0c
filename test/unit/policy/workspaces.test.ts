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
