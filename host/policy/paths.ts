import { closeSync, constants, fchownSync, fstatSync, ftruncateSync, lchownSync, lstatSync, mkdirSync, statSync, openSync, readSync, readlinkSync, realpathSync, writeSync } from 'node:fs';
import { isAbsolute, join, relative, sep } from 'node:path';

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

/** Paths a runner may never write, wherever they sit in its workspace. */
const PROTECTED = [/(^|\/)\.git\/hooks(\/|$)/, /(^|\/)\.git\/config$/];

/**
 * Split a runner-given relative path into checked components: no absolute path, no `..`, no NUL,
 * no empty or `.` parts. Returns the components.
 */
export function checkRelative(rel: string): string[] {
  if (rel.includes('\0')) throw new PathPolicyError('INVALID', 'path contains a NUL byte');
  if (isAbsolute(rel)) throw new PathPolicyError('OUTSIDE', `absolute path ${JSON.stringify(rel)}: paths are relative to the workspace`);
  const parts = rel.split(/[\\/]+/).filter((p) => p !== '' && p !== '.');
  if (parts.length === 0) throw new PathPolicyError('INVALID', 'empty path');
  if (parts.includes('..')) throw new PathPolicyError('OUTSIDE', `path ${JSON.stringify(rel)} climbs out with ".."`);
  return parts;
}

/** Is `path` the root or inside it (both already real paths)? */
function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

/** Give a folder the host just made inside a run's workspace to the workspace's owner (the run's host uid); links are never followed. */
function ownLikeRoot(root: string, path: string): void {
  const owner = statSync(root);
  lchownSync(path, owner.uid, owner.gid);
}

/**
 * Walk the directories of `parts` under `root` one by one with lstat, refusing any symlink (so a
 * planted link can never redirect the walk); optionally creating missing directories (0700).
 */
function walkDirs(root: string, dirs: string[], create: boolean): string {
  let current = root;
  for (const part of dirs) {
    current = join(current, part);
    let stat;
    try {
      stat = lstatSync(current);
    } catch {
      if (!create) throw new PathPolicyError('NOT_FOUND', `${relative(root, current)} does not exist`);
      mkdirSync(current, { mode: 0o700 });
      ownLikeRoot(root, current);
      stat = lstatSync(current);
    }
    if (stat.isSymbolicLink()) throw new PathPolicyError('SYMLINK', `${relative(root, current)} is a symbolic link; links are never followed`);
    if (!stat.isDirectory()) throw new PathPolicyError('NOT_FILE', `${relative(root, current)} is not a directory`);
  }
  return current;
}

/**
 * After opening, check what was opened, not the name (TOCTOU): the descriptor's real path must
 * still be inside the root, and a regular file with a single link.
 */
function verifyOpened(fd: number, root: string, shown: string): void {
  const stat = fstatSync(fd);
  if (!stat.isFile()) throw new PathPolicyError('NOT_FILE', `${shown} is not a regular file`);
  if (stat.nlink > 1) throw new PathPolicyError('HARDLINK', `${shown} has ${stat.nlink} hard links; a hard link may point at a file outside the workspace`);
  const real = readlinkSync(`/proc/self/fd/${fd}`);
  if (!inside(root, real)) throw new PathPolicyError('OUTSIDE', `${shown} resolves outside the workspace`);
}

/** Read a runner-named file of the workspace; links are never followed. */
export function readInside(rootPath: string, rel: string, maxBytes: number): { content: Buffer; size: number; truncated: boolean } {
  const root = realpathSync(rootPath);
  const parts = checkRelative(rel);
  const dir = walkDirs(root, parts.slice(0, -1), false);
  const file = join(dir, parts.at(-1)!);
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') throw new PathPolicyError('SYMLINK', `${rel} is a symbolic link; links are never followed`);
    if (code === 'ENOENT') throw new PathPolicyError('NOT_FOUND', `${rel} does not exist`);
    throw error;
  }
  try {
    verifyOpened(fd, root, rel);
    const size = fstatSync(fd).size;
    const length = Math.min(size, maxBytes);
    const content = Buffer.alloc(length);
    let read = 0;
    while (read < length) {
      const n = readSync(fd, content, read, length - read, read);
      if (n === 0) break;
      read += n;
    }
    return { content: content.subarray(0, read), size, truncated: size > read };
  } finally {
    closeSync(fd);
  }
}

/** Write a runner-named file of the workspace; links are never followed, `.git/hooks` and `.git/config` are refused. */
export function writeInside(rootPath: string, rel: string, content: Buffer, mode: 'create' | 'overwrite' | 'append'): number {
  const root = realpathSync(rootPath);
  const parts = checkRelative(rel);
  const normalized = parts.join('/');
  if (PROTECTED.some((p) => p.test(normalized))) throw new PathPolicyError('PROTECTED', `${normalized} is protected: .git/hooks and .git/config are never writable by a runner`);
  const dir = walkDirs(root, parts.slice(0, -1), true);
  const file = join(dir, parts.at(-1)!);
  const flags =
    constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW | (mode === 'create' ? constants.O_EXCL : mode === 'append' ? constants.O_APPEND : 0);
  let fd: number;
  try {
    fd = openSync(file, flags, 0o600);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') throw new PathPolicyError('SYMLINK', `${rel} is a symbolic link; links are never followed`);
    if (code === 'EEXIST') throw new PathPolicyError('EXISTS', `${rel} exists (mode "create")`);
    throw error;
  }
  try {
    verifyOpened(fd, root, rel);
    // What the host makes for a run is the run's (its host uid under bwrap), like what it writes itself.
    const owner = statSync(root);
    if (fstatSync(fd).uid !== owner.uid) fchownSync(fd, owner.uid, owner.gid);
    // Truncate only after the checks: O_TRUNC at open would already have cut a wrong file.
    if (mode === 'overwrite') {
      ftruncateSync(fd, 0);
    }
    let written = 0;
    while (written < content.length) written += writeSync(fd, content, written, content.length - written, mode === 'append' ? null : written);
    return written;
  } finally {
    closeSync(fd);
  }
}
