import { constants, promises as fsp } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { isAbsolute, relative, sep } from 'node:path';
import { clip } from '../util/clip.js';
import { closeQuietly, fileKind, lstatBeneath, mkdirBeneath, openDirBeneath, pathBeneath, reopen } from './beneath.js';

/** Why a path was refused; `code` is stable. */
export class PathPolicyError extends Error {
  override readonly name = 'PathPolicyError';
  constructor(
    readonly code: 'OUTSIDE' | 'SYMLINK' | 'HARDLINK' | 'NOT_FILE' | 'NOT_FOUND' | 'PROTECTED' | 'EXISTS' | 'INVALID',
    message: string,
  ) {
    super(message);
  }
}

/** Longest path (PATH_MAX, with its NUL) and path component (NAME_MAX) Linux takes, in bytes. */
export const PATH_MAX_BYTES = 4095;
const NAME_MAX_BYTES = 255;

/** Paths a runner may never write, wherever they sit in its workspace. */
const PROTECTED = [/(^|\/)\.git\/hooks(\/|$)/, /(^|\/)\.git\/config$/];

/**
 * Split a runner-given relative path into checked components: no absolute path, no `..`, no NUL,
 * no empty or `.` parts. Returns the components.
 */
export function checkRelative(rel: string): string[] {
  if (rel.includes('\0')) throw new PathPolicyError('INVALID', 'path contains a NUL byte');
  // Checked here, not left to the kernel: ENAMETOOLONG is the runner's fault, not the host's.
  const bytes = Buffer.byteLength(rel);
  if (bytes > PATH_MAX_BYTES)
    throw new PathPolicyError('INVALID', `path is ${bytes} bytes; the limit is ${PATH_MAX_BYTES}`);
  if (isAbsolute(rel))
    throw new PathPolicyError(
      'OUTSIDE',
      `absolute path ${JSON.stringify(clip(rel))}: paths are relative to the workspace`,
    );
  const parts = rel.split(/[\\/]+/).filter((p) => p !== '' && p !== '.');
  if (parts.length === 0) throw new PathPolicyError('INVALID', 'empty path');
  if (parts.includes('..'))
    throw new PathPolicyError('OUTSIDE', `path ${JSON.stringify(clip(rel))} climbs out with ".."`);
  const long = parts.find((p) => Buffer.byteLength(p) > NAME_MAX_BYTES);
  if (long !== undefined)
    throw new PathPolicyError(
      'INVALID',
      `path component ${JSON.stringify(clip(long))} is ${Buffer.byteLength(long)} bytes; ` +
        `the limit is ${NAME_MAX_BYTES}`,
    );
  return parts;
}

/** {@link checkRelative}, and for a write: `.git/hooks` and `.git/config` are refused. Returns the components. */
export function checkWritable(rel: string): string[] {
  const parts = checkRelative(rel);
  const normalized = parts.join('/');
  if (PROTECTED.some((p) => p.test(normalized)))
    throw new PathPolicyError(
      'PROTECTED',
      `${normalized} is protected: .git/hooks and .git/config are never writable by a runner`,
    );
  return parts;
}

/** Is `path` the root or inside it (both already real paths)? */
function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

/** The refusal for a component that could not be opened as a directory: say what it is instead. */
async function notADirectory(dir: FileHandle, name: string, shown: string): Promise<PathPolicyError> {
  const stat = await lstatBeneath(dir, name);
  if (!stat) return new PathPolicyError('NOT_FOUND', `${clip(shown)} does not exist`);
  if (stat.isSymbolicLink())
    return new PathPolicyError('SYMLINK', `${clip(shown)} is a symbolic link; links are never followed`);
  // A directory now, but not when it was opened: swapped with a link or a file meanwhile.
  if (stat.isDirectory())
    return new PathPolicyError(
      'SYMLINK',
      `${clip(shown)} was swapped while the path was walked (a link or a file stood there); links are never followed`,
    );
  return new PathPolicyError('NOT_FILE', `${clip(shown)} is ${fileKind(stat)}, not a directory`);
}

/**
 * Walk `dirs` beneath the held root descriptor one component at a time, each opened with
 * O_DIRECTORY|O_NOFOLLOW relative to the previous descriptor (never by path string), creating
 * missing ones (0700) when asked. Returns the last directory's descriptor (the caller closes it;
 * intermediate ones are closed here). A link at any depth is refused, even one swapped in mid-walk.
 */
export async function walkBeneath(root: FileHandle, dirs: string[], create: boolean): Promise<FileHandle> {
  let current = root;
  const shown: string[] = [];
  try {
    for (const part of dirs) {
      shown.push(part);
      let next: FileHandle | undefined;
      try {
        next = await openDirBeneath(current, part);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' && create) {
          const made = await mkdirBeneath(current, part);
          next = await openDirBeneath(current, part).catch(() => undefined);
          // What the host makes for a run is the run's (its host uid under bwrap), like what it makes itself.
          if (made && next) await ownLikeRoot(root, next);
        } else if (code !== 'ENOENT' && code !== 'ENOTDIR' && code !== 'ELOOP') throw error;
        if (!next) throw await notADirectory(current, part, shown.join('/'));
      }
      if (current !== root) await closeQuietly(current);
      current = next;
    }
    return current;
  } catch (error) {
    if (current !== root) await closeQuietly(current);
    throw error;
  }
}

/**
 * Give something the host just created beneath the workspace to the workspace's owner (the run's host uid), through
 * its descriptor.
 */
async function ownLikeRoot(root: FileHandle, made: FileHandle): Promise<void> {
  const [owner, stat] = await Promise.all([root.stat(), made.stat()]);
  if (stat.uid !== owner.uid || stat.gid !== owner.gid) await made.chown(owner.uid, owner.gid);
}

/** The workspace root, opened as a directory (the host names it; its real path bounds every result). */
async function openRoot(rootPath: string): Promise<{ handle: FileHandle; real: string }> {
  const real = await fsp.realpath(rootPath);
  return { handle: await fsp.open(real, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW), real };
}

/**
 * Check what an O_PATH descriptor names before anything is opened: a regular file with a single
 * link. A FIFO, socket or device is never opened at all (no blocking open, no device side effect).
 */
async function checkNamed(named: FileHandle, shown: string): Promise<{ dev: number; ino: number }> {
  const stat = await named.stat();
  if (stat.isSymbolicLink())
    throw new PathPolicyError('SYMLINK', `${clip(shown)} is a symbolic link; links are never followed`);
  if (!stat.isFile())
    throw new PathPolicyError(
      'NOT_FILE',
      `${clip(shown)} is ${fileKind(stat)}, not a regular file; only regular files are read or written`,
    );
  if (stat.nlink > 1)
    throw new PathPolicyError(
      'HARDLINK',
      `${clip(shown)} has ${stat.nlink} hard links; a hard link may point at a file outside the workspace`,
    );
  return { dev: stat.dev, ino: stat.ino };
}

/**
 * After opening, check what was opened (defence in depth): the same inode the checks saw, still a
 * regular single-link file, and its real path still inside the root.
 */
async function verifyOpened(
  handle: FileHandle,
  root: string,
  shown: string,
  expected?: { dev: number; ino: number },
): Promise<void> {
  const stat = await handle.stat();
  if (!stat.isFile()) throw new PathPolicyError('NOT_FILE', `${clip(shown)} is ${fileKind(stat)}, not a regular file`);
  if (expected && (stat.dev !== expected.dev || stat.ino !== expected.ino))
    throw new PathPolicyError('OUTSIDE', `${clip(shown)} changed while it was opened`);
  if (stat.nlink > 1)
    throw new PathPolicyError(
      'HARDLINK',
      `${clip(shown)} has ${stat.nlink} hard links; a hard link may point at a file outside the workspace`,
    );
  const real = await fsp.readlink(`/proc/self/fd/${handle.fd}`);
  if (!inside(root, real)) throw new PathPolicyError('OUTSIDE', `${clip(shown)} resolves outside the workspace`);
}

/** Open an existing regular file beneath `dir` by name: O_PATH first, checks, then the real open. */
async function openExisting(
  dir: FileHandle,
  name: string,
  flags: number,
  shown: string,
): Promise<{ handle: FileHandle; id: { dev: number; ino: number } } | undefined> {
  let named: FileHandle;
  try {
    named = await pathBeneath(dir, name);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    const id = await checkNamed(named, shown);
    return { handle: await reopen(named, flags), id };
  } finally {
    await closeQuietly(named);
  }
}

/** Read a runner-named file of the workspace; links are never followed, only regular files are opened. */
export async function readInside(
  rootPath: string,
  rel: string,
  maxBytes: number,
): Promise<{ content: Buffer; size: number; truncated: boolean }> {
  const parts = checkRelative(rel);
  const { handle: root, real } = await openRoot(rootPath);
  let dir: FileHandle | undefined;
  let file: FileHandle | undefined;
  try {
    dir = await walkBeneath(root, parts.slice(0, -1), false);
    const opened = await openExisting(dir, parts.at(-1)!, constants.O_RDONLY, rel);
    if (!opened) throw new PathPolicyError('NOT_FOUND', `${clip(rel)} does not exist`);
    file = opened.handle;
    await verifyOpened(file, real, rel, opened.id);
    const { size } = await file.stat();
    const length = Math.min(size, maxBytes);
    const content = Buffer.alloc(length);
    let read = 0;
    while (read < length) {
      const { bytesRead } = await file.read(content, read, length - read, read);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    return { content: content.subarray(0, read), size, truncated: size > read };
  } finally {
    await closeQuietly(file);
    if (dir !== root) await closeQuietly(dir);
    await closeQuietly(root);
  }
}

/** What a write found before it wrote: the file's size and, when at most `readUpTo` bytes, its bytes. */
export interface FoundBefore {
  size: number;
  bytes?: Buffer;
}

/** Read what the opened file holds before it is written (the same inode, reopened read-only), up to `readUpTo`. */
async function readBefore(file: FileHandle, readUpTo: number): Promise<FoundBefore> {
  const { size } = await file.stat();
  if (size > readUpTo) return { size };
  let reader: FileHandle | undefined;
  try {
    reader = await reopen(file, constants.O_RDONLY);
    const bytes = Buffer.alloc(size + 1);
    let read = 0;
    while (read < bytes.length) {
      const { bytesRead } = await reader.read(bytes, read, bytes.length - read, read);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    // Grown since its size was taken: only its size is recorded.
    return read > size ? { size } : { size, bytes: bytes.subarray(0, read) };
  } catch {
    return { size }; // not readable by the host (a mode the run set): its size only
  } finally {
    await closeQuietly(reader);
  }
}

/**
 * Write a runner-named file of the workspace: missing directories and the file are created beneath
 * held descriptors, links are never followed, only regular files are opened, `.git/hooks` and
 * `.git/config` are refused, and an overwrite truncates only after every check. With `before`, what the file held
 * is read from the very inode about to be written (after the checks, before any byte changes) and handed to it
 * (undefined: the write creates the file), so the recorded diff is of this file, whatever was renamed meanwhile.
 * `mayWrite` is asked before each step that changes something (directories, the new file, the bytes): it throws to
 * refuse the rest.
 */
export async function writeInside(
  rootPath: string,
  rel: string,
  content: Buffer,
  mode: 'create' | 'overwrite' | 'append',
  before?: { readUpTo: number; found(previous: FoundBefore | undefined): void },
  mayWrite: () => void = () => undefined,
): Promise<number> {
  const parts = checkWritable(rel);
  const { handle: root, real } = await openRoot(rootPath);
  let dir: FileHandle | undefined;
  let file: FileHandle | undefined;
  const name = parts.at(-1)!;
  const access = constants.O_WRONLY | (mode === 'append' ? constants.O_APPEND : 0);
  try {
    mayWrite();
    dir = await walkBeneath(root, parts.slice(0, -1), true);
    let expected: { dev: number; ino: number } | undefined;
    if (mode !== 'create') {
      const opened = await openExisting(dir, name, access, rel);
      if (opened) ({ handle: file, id: expected } = opened);
    }
    if (!file) {
      // O_CREAT|O_EXCL|O_NOFOLLOW: only a file this call creates is opened; whatever appeared
      // under the name meanwhile (a link, a FIFO, another file) makes it fail instead.
      try {
        mayWrite();
        file = await fsp.open(
          `/proc/self/fd/${dir.fd}/${name}`,
          access | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW | constants.O_NONBLOCK,
          0o600,
        );
        await ownLikeRoot(root, file);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        const stat = await lstatBeneath(dir, name);
        if (stat?.isSymbolicLink())
          throw new PathPolicyError('SYMLINK', `${clip(rel)} is a symbolic link; links are never followed`);
        if (mode === 'create')
          throw new PathPolicyError(
            'EXISTS',
            `${clip(rel)} exists${stat ? ` (${fileKind(stat)})` : ''} (mode "create")`,
          );
        if (stat && !stat.isFile())
          throw new PathPolicyError(
            'NOT_FILE',
            `${clip(rel)} is ${fileKind(stat)}, not a regular file; only regular files are read or written`,
          );
        throw new PathPolicyError('EXISTS', `${clip(rel)} appeared while it was being created; try again`);
      }
    }
    await verifyOpened(file, real, rel, expected);
    before?.found(expected ? await readBefore(file, before.readUpTo) : undefined);
    mayWrite();
    // Truncate only after the checks: O_TRUNC at open would already have cut a wrong file.
    if (mode === 'overwrite') await file.truncate(0);
    let written = 0;
    while (written < content.length) {
      // Asked again before each call: the host may have stopped while the truncate or the last chunk was in flight.
      mayWrite();
      const { bytesWritten } = await file.write(
        content,
        written,
        content.length - written,
        mode === 'append' ? null : written,
      );
      written += bytesWritten;
    }
    return written;
  } finally {
    await closeQuietly(file);
    if (dir !== root) await closeQuietly(dir);
    await closeQuietly(root);
  }
}
