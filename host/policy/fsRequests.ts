import { ErrorCodes } from '../../sdk/protocol/errorCodes.js';
import { RpcError } from '../../sdk/protocol/rpcError.js';
import type { HostRequestEntries } from '../rpc/hostRequestHandler.js';
import { clip } from '../util/clip.js';
import type { Action } from './actions.js';
import { checkRelative, checkWritable, PathPolicyError, readInside, writeInside, type FoundBefore } from './paths.js';

/** Most a single `fs/read` returns. */
const MAX_READ_BYTES = 4 * 1024 * 1024;

/** Errnos of the host's own file operation that the runner's request caused (not a host fault). */
const CLIENT_ERRNOS = new Set(['ENAMETOOLONG', 'ENOTDIR', 'EISDIR', 'ELOOP']);
/** Errnos of a full workspace (its disk limit), not of the host. */
const FULL_ERRNOS = new Set(['ENOSPC', 'EDQUOT', 'EFBIG']);

/**
 * The answer to a failed fs request. A path-policy refusal is `PolicyDenied` with `deniedBy`
 * (recorded denied and audited by the journal); a missing file or an existing one under mode
 * `create` is an answer about the workspace, not a refusal under a rule (no `deniedBy`). Every
 * echoed path is clipped.
 */
function refusal(error: unknown, method: string, path: string): never {
  if (error instanceof PathPolicyError) {
    if (error.code === 'NOT_FOUND') throw new RpcError(ErrorCodes.NotFound, error.message, { method });
    if (error.code === 'EXISTS') throw new RpcError(ErrorCodes.InvalidParams, error.message, { method });
    throw RpcError.policyDenied(`${method}: ${error.message}`, {
      deniedBy: `pathPolicy.${error.code.toLowerCase()}`,
      method,
    });
  }
  // An I/O error of the host's own file operation: the runner is told which errno, about its own
  // (clipped) relative path, and the run goes on. One its request caused is InvalidParams, a full
  // workspace QuotaExceeded; only the rest (EACCES, EIO…) is the host's InternalError.
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (typeof code === 'string' && /^E[A-Z0-9]+$/.test(code)) {
    const message = `${method} ${JSON.stringify(clip(path))} failed: ${code}`;
    if (CLIENT_ERRNOS.has(code)) throw new RpcError(ErrorCodes.InvalidParams, message, { errno: code });
    if (FULL_ERRNOS.has(code))
      throw new RpcError(ErrorCodes.QuotaExceeded, message, { errno: code, limit: 'diskBytes' });
    throw new RpcError(ErrorCodes.InternalError, message, { errno: code });
  }
  throw error;
}

function lexically(check: () => unknown, method: string, path: string): void {
  try {
    check();
  } catch (error) {
    refusal(error, method, path);
  }
}

/**
 * The run's policy as fs requests meet it (host/policy/runPolicy.ts): decided before the path policy
 * touches anything (a denial throws `PolicyDenied`), and told what a read returned (taint).
 */
export interface FsGate {
  checkPath(effect: 'fs.read' | 'fs.write', path: string, signal?: AbortSignal): Promise<Action>;
  afterRead(path: string, content: Buffer, wasCredential: boolean): void;
}

/**
 * Where the host's writes are recorded (host/changes/runChanges.ts): the file as the write found it (undefined: it
 * created it), read up to `readUpTo` bytes, and what was written.
 */
export interface WriteRecorder {
  readUpTo: number;
  written(
    path: string,
    previous: FoundBefore | undefined,
    content: Buffer,
    mode: 'create' | 'overwrite' | 'append',
  ): void;
}

/**
 * Answers `fs/read` and `fs/write` inside the run's workspace through the path policy (no link
 * followed, no `..`, no hard link, only regular files opened, `.git/hooks` and `.git/config` never
 * written), all of it off the event loop. Which of the two a run may call is decided by its
 * access (`grants.fs`). Each write is handed to `recorder` (its diff) once it is done. `mayWrite` is asked right
 * before a write changes anything (it throws to refuse).
 */
export function fsRequests(
  workspaceRoot: string,
  gate?: FsGate,
  recorder?: WriteRecorder,
  mayWrite?: () => void,
): HostRequestEntries {
  return {
    'fs/read': async (params, scope) => {
      const path = String(params.path);
      // What the path policy refuses by the path's text alone it refuses under its own name, before any ask.
      lexically(() => checkRelative(path), 'fs/read', path);
      const action = await gate?.checkPath('fs.read', path, scope.signal);
      try {
        const encoding = (params.encoding as 'utf8' | 'base64' | undefined) ?? 'utf8';
        const { content, size, truncated } = await readInside(
          workspaceRoot,
          path,
          Math.min(Number(params.maxBytes ?? MAX_READ_BYTES), MAX_READ_BYTES),
        );
        gate?.afterRead(path, content, action?.effect === 'credential');
        return { content: content.toString(encoding), encoding, size, truncated };
      } catch (error) {
        refusal(error, 'fs/read', path);
      }
    },
    'fs/write': async (params, scope) => {
      const path = String(params.path);
      lexically(() => checkWritable(path), 'fs/write', path);
      await gate?.checkPath('fs.write', path, scope.signal);
      try {
        const encoding = (params.encoding as 'utf8' | 'base64' | undefined) ?? 'utf8';
        const bytes = Buffer.from(String(params.content), encoding);
        const mode = (params.mode as 'create' | 'overwrite' | 'append' | undefined) ?? 'overwrite';
        let found: FoundBefore | undefined;
        const bytesWritten = await writeInside(
          workspaceRoot,
          path,
          bytes,
          mode,
          recorder && { readUpTo: recorder.readUpTo, found: (previous) => (found = previous) },
          mayWrite,
        );
        // Recorded once written (a write refused or failed changed nothing to record).
        recorder?.written(path, found, bytes, mode);
        return { bytesWritten };
      } catch (error) {
        refusal(error, 'fs/write', path);
      }
    },
  };
}
