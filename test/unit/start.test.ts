import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseLimits } from '../../host/config/limits.js';
import type { HostConfig } from '../../host/config/hostConfig.js';
import { runSocketPath } from '../../host/sandbox/runSockets.js';
import { openHost } from '../../host/start.js';
import { Store } from '../../host/state/store.js';
import { processStartTime } from '../../host/util/procIdentity.js';

const DAY_MS = 86_400_000;

/** A folder whose mtime is `ageMs` in the past. */
function folder(path: string, ageMs: number): string {
  mkdirSync(path, { recursive: true });
  const at = new Date(Date.now() - ageMs);
  utimesSync(path, at, at);
  return path;
}

describe('openHost (host/start.ts)', () => {
  it(
    'reconciles what a stopped host left, sweeps expired folders, starts the gateway listener, and closes it ' + 'all',
    async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'paddock-start-'));
      // A host that stopped mid-run: its run is queued, recorded with no live owner.
      const before = Store.open({ dataDir });
      const { sessionId } = before.ensureSession('default', 'b', 'k');
      before.append(sessionId, [
        { type: 'run.queued', runId: 'run_leftover1', data: { runner: 'echo', goalRevision: 0, attempt: 1 } },
      ]);
      // And a run a live host process (this one) still owns: neither interrupted nor swept.
      const owned = before.ensureSession('default', 'b', 'k2').sessionId;
      before.append(owned, [
        {
          type: 'run.queued',
          runId: 'run_owned0001',
          data: {
            runner: 'echo',
            goalRevision: 0,
            attempt: 1,
            host: { pid: process.pid, start: processStartTime(process.pid)! },
          },
        },
      ]);
      before.close();
      const expiredWorkspace = folder(join(dataDir, 'workspaces', 'run_expired01'), 8 * DAY_MS);
      const freshWorkspace = folder(join(dataDir, 'workspaces', 'run_fresh0001'), 0);
      const expiredSession = folder(join(dataDir, 'sessions', `ses_${randomUUID()}`), 31 * DAY_MS);
      const interruptedSession = folder(join(dataDir, 'sessions', sessionId), 31 * DAY_MS);
      const liveSession = folder(join(dataDir, 'sessions', owned), 31 * DAY_MS);
      const liveWorkspace = folder(join(dataDir, 'workspaces', 'run_owned0001'), 8 * DAY_MS);
      // Per-run pipes a killed host left (a FIFO stands for a socket: the sweep removes both kinds).
      mkdirSync(join(dataDir, 'sockets'));
      const [staleSocket, liveSocket] = ['run_leftover1', 'run_owned0001'].map((runId) => {
        const path = runSocketPath(dataDir, runId, 'gateway');
        execFileSync('/usr/bin/mkfifo', ['-m', '0600', path], { env: {}, stdio: 'ignore' });
        return path;
      });

      const config: HostConfig = {
        dataDir,
        limits: parseLimits({}),
        runnerDirs: [],
        logLevel: 'silent',
        keepWorkspaces: false,
      };
      const host = await openHost(config, { listen: true });
      try {
        expect(host.recovery.interruptedRuns).toEqual([{ runId: 'run_leftover1', sessionId, killedPid: null }]);
        expect(host.store.run('run_leftover1')?.status).toBe('interrupted');
        expect(host.store.audit.records({ types: ['recovery.run_interrupted'] }).map((r) => r.runId)).toEqual([
          'run_leftover1',
        ]);
        expect(existsSync(expiredWorkspace)).toBe(false);
        expect(existsSync(freshWorkspace)).toBe(true);
        expect(existsSync(expiredSession)).toBe(false);
        // Recovery goes first: the interrupted run no longer holds its session folder; a live run holds both of its
        // folders.
        expect(existsSync(interruptedSession)).toBe(false);
        expect(existsSync(liveSession)).toBe(true);
        expect(existsSync(liveWorkspace)).toBe(true);
        // Recovery first here too: the interrupted run's socket goes, the live run's stays.
        expect(existsSync(staleSocket!)).toBe(false);
        expect(existsSync(liveSocket!)).toBe(true);
        expect(host.store.run('run_owned0001')?.status).toBe('queued');
        expect(host.gatewayUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
        const answer = await fetch(`${host.gatewayUrl}/v1/messages`, { method: 'POST', body: '{}' });
        expect(answer.status).toBe(401); // listening, and refusing a call without a run token
      } finally {
        await host.close();
      }
      await host.close(); // idempotent
      await expect(fetch(`${host.gatewayUrl}/v1/messages`, { method: 'POST', body: '{}' })).rejects.toThrow();
      // Closed means closed: the store signed its head and a new host opens the same folder cleanly.
      const again = await openHost(config);
      expect(again.recovery).toEqual({ interruptedRuns: [], effects: [], pausedSessions: [], resumedSessions: [] });
      await again.close();
    },
  );

  it('binds no port unless asked', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'paddock-start-'));
    const host = await openHost({
      dataDir,
      limits: parseLimits({}),
      runnerDirs: [],
      logLevel: 'silent',
      keepWorkspaces: false,
    });
    expect(host.gatewayUrl).toBeUndefined();
    await host.close();
  });
});
