import { createHash } from 'node:crypto';
import { statSync, type BigIntStats } from 'node:fs';
import { settledBefore } from '../util/racyStat.js';
import { readBoundedFile } from '../util/readBoundedFile.js';

/**
 * The sha256 of files from an untrusted folder (a runner package's build inputs), read again only when their stat
 * changed. A file is identified by device, inode, size, mtime and ctime (nanoseconds): every write moves ctime,
 * which no process can set back (utimes sets mtime and atime only), so an equal identity means the same content —
 * once the file's ctime is older than the hashing by `RACY_MS` (util/racyStat.ts); a younger file is read every time.
 */
export class InputHashes {
  private readonly known = new Map<string, { identity: string; sha256: string }>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Whether `path` (a link at its end followed) is a regular file whose content hashes to `sha256`. */
  matches(path: string, sha256: string): boolean {
    let stat: BigIntStats | undefined;
    try {
      stat = statSync(path, { bigint: true });
    } catch {
      return false;
    }
    // A FIFO or device in place of an input is "changed" (and a rebuild refuses it), never a blocked read.
    if (!stat.isFile()) return false;
    const identity = `${stat.dev}:${stat.ino}:${stat.size}:${stat.mtimeNs}:${stat.ctimeNs}`;
    const known = this.known.get(path);
    if (known?.identity === identity) return known.sha256 === sha256;
    let actual: string;
    try {
      actual = createHash('sha256')
        .update(readBoundedFile(path, { followLinks: true }))
        .digest('hex');
    } catch {
      return false;
    }
    // Stat taken before the read: a write during the read moves ctime, so the next check reads again.
    if (settledBefore(stat.ctimeNs, this.now())) this.known.set(path, { identity, sha256: actual });
    else this.known.delete(path);
    return actual === sha256;
  }
}
