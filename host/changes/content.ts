import { createHash } from 'node:crypto';

/** One side of a recorded change, as `file.changed` stores it (docs/state.md). */
export interface FileVersion {
  kind: 'file' | 'link' | 'other';
  size: number;
  /** Of the whole content; null when it was not read (over a cap, unreadable, a hard link) or is not a file. */
  sha256: string | null;
  /** Permission bits (`0o7777`), when known (a snapshot's). */
  mode?: number;
  /** A link's target text (never followed). */
  target?: string;
}

/** A file's sha256, hex. */
export function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** The bytes as text when they are text (valid UTF-8 with no NUL byte), else undefined: binary is never diffed. */
export function asText(bytes: Buffer): string | undefined {
  if (bytes.includes(0)) return undefined;
  try {
    return UTF8.decode(bytes);
  } catch {
    return undefined;
  }
}
