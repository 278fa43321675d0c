import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { readChunkSize } from './readSize.js';

/** Why {@link readBoundedFile} refused a file (the message says it in words, without the path). */
export class BoundedReadError extends Error {
  override readonly name = 'BoundedReadError';
}

/** How {@link readBoundedFile} reads. */
export interface BoundedReadOptions {
  /** Refuse a file larger than this (checked on the open file, and again while reading). Unset: no cap. */
  maxBytes?: number;
  /** Follow a symbolic link in the last path component (default false: a link is refused). */
  followLinks?: boolean;
}

/**
 * Read a file from an untrusted folder (a runner package, a skill) without letting it stall or exhaust the host:
 * opened non-blocking (a FIFO with no writer cannot hang the open), by default without following a link at the end,
 * checked on the open descriptor to be a regular file (not a FIFO, device, socket or folder), and read to at most
 * `maxBytes + 1` bytes so a file that grows or lies about its size is still refused. Throws BoundedReadError
 * (or the open's own error, e.g. ENOENT) naming what is wrong.
 */
export function readBoundedFile(file: string, options: BoundedReadOptions = {}): Buffer {
  const { maxBytes, followLinks = false } = options;
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK | (followLinks ? 0 : constants.O_NOFOLLOW));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ELOOP')
      throw new BoundedReadError('is a symbolic link; a regular file is required');
    throw error;
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new BoundedReadError(`is not a regular file (${kindOf(stat)})`);
    if (maxBytes !== undefined && stat.size > maxBytes)
      throw new BoundedReadError(`is ${stat.size} bytes, more than the limit of ${maxBytes}`);
    // Read up to `limit` bytes: the cap + 1 (to notice a file over it), or to EOF without a cap.
    const limit = maxBytes === undefined ? Infinity : maxBytes + 1;
    const chunks: Buffer[] = [];
    let total = 0;
    // The first buffer is sized to the file (+ 1 to notice one that grew after fstat); only a file that fills it
    // (procfs, a growing file) is read on in further, larger buffers, until EOF, never past the cap.
    let chunk = Buffer.allocUnsafe(Math.min(readChunkSize(stat.size + 1), limit));
    let filled = 0;
    for (;;) {
      if (filled === chunk.length) {
        chunks.push(chunk);
        const want = Math.min(readChunkSize(total), limit - total);
        if (want <= 0) break;
        chunk = Buffer.allocUnsafe(want);
        filled = 0;
      }
      const n = readSync(fd, chunk, filled, chunk.length - filled, null);
      if (n === 0) break;
      filled += n;
      total += n;
    }
    if (filled > 0 && filled < chunk.length) chunks.push(chunk.subarray(0, filled));
    if (maxBytes !== undefined && total > maxBytes)
      throw new BoundedReadError(`grew past the limit of ${maxBytes} bytes while being read`);
    return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total);
  } finally {
    closeSync(fd);
  }
}

function kindOf(stat: import('node:fs').Stats): string {
  if (stat.isFIFO()) return 'a FIFO';
  if (stat.isCharacterDevice()) return 'a character device';
  if (stat.isBlockDevice()) return 'a block device';
  if (stat.isSocket()) return 'a socket';
  if (stat.isDirectory()) return 'a folder';
  return 'not a file';
}
