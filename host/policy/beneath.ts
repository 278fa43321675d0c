import { constants, promises as fsp, type Stats } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';

/**
 * Resolution beneath a held directory descriptor, for runner-named paths (issue 11, item 7).
 *
 * Node has no openat(2) and openat2(RESOLVE_BENEATH) is out of reach without a native addon, so
 * every lookup goes through `/proc/self/fd/<dirfd>/<name>`: the kernel jumps to the directory the
 * descriptor holds (whatever its name is now) and looks up exactly one component there. A runner
 * that swaps a directory with a symlink between two steps cannot redirect the walk: the held
 * descriptor keeps pointing at the directory, and each new component is opened with O_NOFOLLOW.
 * All I/O is fs.promises (the libuv threadpool), never the event loop.
 */

/** O_PATH (Linux): a descriptor that names an inode without opening it (no device open, no FIFO wait). */
export const O_PATH = 0o10000000;

/** The `/proc` path of one component beneath a held directory (or of the descriptor itself). */
export function beneath(dir: FileHandle, name?: string): string {
  return name === undefined ? `/proc/self/fd/${dir.fd}` : `/proc/self/fd/${dir.fd}/${name}`;
}

/** A human name for the type of a file, for refusals ("a FIFO (named pipe)", "a socket", …). */
export function fileKind(stat: Stats): string {
  if (stat.isFile()) return 'a regular file';
  if (stat.isDirectory()) return 'a directory';
  if (stat.isSymbolicLink()) return 'a symbolic link';
  if (stat.isFIFO()) return 'a FIFO (named pipe)';
  if (stat.isSocket()) return 'a socket';
  if (stat.isCharacterDevice()) return 'a character device';
  if (stat.isBlockDevice()) return 'a block device';
  return 'not a regular file';
}

/** lstat one component beneath `dir` (never follows it); undefined when it does not exist. */
export async function lstatBeneath(dir: FileHandle, name: string): Promise<Stats | undefined> {
  try {
    return await fsp.lstat(beneath(dir, name));
  } catch {
    return undefined;
  }
}

/** Open the directory `name` directly beneath `dir`, never following a link; throws the errno error. */
export function openDirBeneath(dir: FileHandle, name: string): Promise<FileHandle> {
  return fsp.open(
    beneath(dir, name),
    constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW | constants.O_NONBLOCK,
  );
}

/** Create the directory `name` directly beneath `dir` (mkdir never follows a final link); true if created. */
export async function mkdirBeneath(dir: FileHandle, name: string, mode = 0o700): Promise<boolean> {
  try {
    await fsp.mkdir(beneath(dir, name), { mode });
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

/** An O_PATH descriptor of `name` beneath `dir` (a link is the link itself, nothing is opened). */
export function pathBeneath(dir: FileHandle, name: string): Promise<FileHandle> {
  return fsp.open(beneath(dir, name), O_PATH | constants.O_NOFOLLOW);
}

/**
 * Really open the inode an O_PATH descriptor names, with `flags`. The `/proc/self/fd/<n>` magic
 * link jumps to the inode itself: no path is resolved again, so a rename in between changes nothing.
 */
export function reopen(pathFd: FileHandle, flags: number): Promise<FileHandle> {
  return fsp.open(beneath(pathFd), flags | constants.O_NONBLOCK);
}

/** Close quietly (a close error after the work is done changes nothing for the caller). */
export async function closeQuietly(handle: FileHandle | undefined): Promise<void> {
  await handle?.close().catch(() => undefined);
}
