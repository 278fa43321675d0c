/** The largest read buffer: a big file is read in pieces of this size, never whole at once. */
export const MAX_READ_CHUNK = 1 << 20;

/** The smallest read buffer: what a file fstat calls empty (procfs) is read in. */
export const MIN_READ_CHUNK = 4096;

/**
 * How large a buffer to read `expected` bytes into (what fstat says is left, + 1 to notice a file that grew), between
 * {@link MIN_READ_CHUNK} and {@link MAX_READ_CHUNK}. Sized to the file, not a fixed 1 MiB: the host reads many small
 * files (every runner build hashes its inputs), and a 1 MiB buffer per file was 1 MiB of malloc'd garbage each — 144
 * MiB over a host's first runs, enough to leave glibc's heap tens of MB larger for the life of `paddock serve`
 * (docs/benchmarks.md, "Soak: RSS, cause and fix"; decisions RS1).
 */
export function readChunkSize(expected: number): number {
  return Math.min(MAX_READ_CHUNK, Math.max(MIN_READ_CHUNK, expected));
}
