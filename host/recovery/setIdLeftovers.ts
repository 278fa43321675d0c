import { join } from 'node:path';
import type { ConfigRepo } from '../bindings/configRepo.js';
import { clearRunSetIdBits } from '../sandbox/runIdentityFiles.js';
import type { RecoveryReport } from './reconcile.js';

/**
 * A run the host did not see to its end never had its setuid/setgid bits cleared: clear them now
 * in its session folder and workspace and in every read-write mount (which of them it had is not
 * recorded; walking them all is the safe side).
 */
export function clearInterruptedSetIdBits(
  dataDir: string,
  recovery: RecoveryReport,
  repo: ConfigRepo,
  audit: (files: unknown[]) => void,
): void {
  if (recovery.interruptedRuns.length === 0) return;
  const rwMounts = repo
    .snapshot()
    .resources.mounts.filter((m) => m.mode === 'rw')
    .map((m) => m.path);
  const roots = [
    ...recovery.interruptedRuns.flatMap((r) => [
      join(dataDir, 'sessions', r.sessionId),
      join(dataDir, 'workspaces', r.runId),
    ]),
    ...rwMounts,
  ];
  let files: unknown[];
  try {
    files = clearRunSetIdBits(roots);
  } catch (error) {
    files = [{ error: String(error) }]; // audited; the host still starts
  }
  if (files.length > 0) audit(files);
}
