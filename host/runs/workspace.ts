import { existsSync, lstatSync, mkdirSync, readdirSync, rmSync, utimesSync } from 'node:fs';
import { join } from 'node:path';

/** The folders of one run. The runner's cwd is `root`; HOME and TMPDIR point inside it. */
export interface RunWorkspace {
  root: string;
  in: string;
  out: string;
  tmp: string;
  home: string;
}

const RUN_ID = /^run_[A-Za-z0-9-]{8,64}$/;

/**
 * Create `<data>/workspaces/<runId>/{in,out,tmp,home}` with owner-only permissions. The run id is
 * host-made; anything else is refused so no caller can steer the path.
 */
export function createRunWorkspace(dataDir: string, runId: string): RunWorkspace {
  if (!RUN_ID.test(runId)) throw new Error(`refusing workspace for malformed run id ${JSON.stringify(runId)}`);
  const root = join(dataDir, 'workspaces', runId);
  const ws = { root, in: join(root, 'in'), out: join(root, 'out'), tmp: join(root, 'tmp'), home: join(root, 'home') };
  for (const dir of [ws.in, ws.out, ws.tmp, ws.home]) mkdirSync(dir, { recursive: true, mode: 0o700 });
  return ws;
}

const SESSION_ID = /^ses_[0-9a-f-]{36}$/;

/**
 * The session's own folder, `<data>/sessions/<sessionId>/`, kept across the session's runs: where
 * a harness keeps what it needs to resume (Claude Code's `CLAUDE_CONFIG_DIR`, Codex's
 * `CODEX_HOME`). Bound read-write into the sandbox; no other session's folder is visible.
 */
export function sessionDir(dataDir: string, sessionId: string): string {
  if (!SESSION_ID.test(sessionId))
    throw new Error(`refusing session folder for malformed session id ${JSON.stringify(sessionId)}`);
  const dir = join(dataDir, 'sessions', sessionId);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // Used now: retention counts from the session's last run, not from its creation.
  const now = new Date();
  utimesSync(dir, now, now);
  return dir;
}

/** Remove a run's workspace (links inside are removed, never followed). */
export function removeRunWorkspace(ws: Pick<RunWorkspace, 'root'>): void {
  rmSync(ws.root, { recursive: true, force: true });
}

/**
 * Remove workspaces older than `ttlMs` that no live run uses (kept ones, and those left by a host
 * that stopped mid-run). Never follows links. Returns the removed run ids.
 */
export function sweepWorkspaces(
  dataDir: string,
  ttlMs: number,
  inUse: ReadonlySet<string>,
  now = Date.now(),
): string[] {
  return sweepFolders(join(dataDir, 'workspaces'), RUN_ID, ttlMs, inUse, now);
}

/**
 * Remove session folders (a harness's resume state) not used for `ttlMs`, except those of
 * sessions with a queued or running run. The session's pointer stays in the store; its next run
 * finds the harness session gone, starts a fresh one and says so.
 */
export function sweepSessionFolders(
  dataDir: string,
  ttlMs: number,
  inUse: ReadonlySet<string>,
  now = Date.now(),
): string[] {
  return sweepFolders(join(dataDir, 'sessions'), SESSION_ID, ttlMs, inUse, now);
}

/** Remove the folders under `dir` named like `pattern`, not in use, untouched for `ttlMs`; links are never followed. */
function sweepFolders(dir: string, pattern: RegExp, ttlMs: number, inUse: ReadonlySet<string>, now: number): string[] {
  if (!existsSync(dir)) return [];
  const removed: string[] = [];
  for (const name of readdirSync(dir)) {
    if (!pattern.test(name) || inUse.has(name)) continue;
    const path = join(dir, name);
    const stat = lstatSync(path);
    if (stat.isDirectory() && now - stat.mtimeMs > ttlMs) {
      rmSync(path, { recursive: true, force: true });
      removed.push(name);
    }
  }
  return removed;
}
