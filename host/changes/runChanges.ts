import { isSecretPath } from '../policy/classify.js';
import type { EventData } from '../state/events.js';
import {
  COMPARE_MAX_RECORDED,
  DIFF_MAX_CHARS,
  KEEP_FILE_MAX_BYTES,
  RUN_DIFF_MAX_CHARS,
  WRITE_HASH_MAX_BYTES,
} from './caps.js';
import { compareSnapshots } from './compare.js';
import { asText, sha256, type FileVersion } from './content.js';
import { SNAPSHOT_BOUNDS, takeSnapshot, type Snapshot, type SnapshotBounds, type SnapshotRoot } from './snapshot.js';
import { unifiedDiff } from './unifiedDiff.js';

/** Where a run's change records go: its journal (host/runs/journal.ts), which redacts and stores them. */
export interface ChangeSink {
  fileChanges(changes: EventData<'file.changed'>[], compared?: EventData<'workspace.compared'>): void;
}

/** A file as a host-mediated write found it: its size, and its bytes when it was read whole (small enough). */
export interface PreviousContent {
  size: number;
  bytes?: Buffer;
}

/** One side of a change as this module sees it: the recorded version and, when known, its text. */
interface Side {
  version: FileVersion;
  text?: string;
  notKept?: string;
}

/** The bounds of one run's change records (defaults: host/changes/caps.ts); tests shrink them. */
export interface RunChangeBounds {
  snapshot: SnapshotBounds;
  maxRecorded: number;
  runDiffChars: number;
}

/** The host's caps. */
export const RUN_CHANGE_BOUNDS: RunChangeBounds = {
  snapshot: SNAPSHOT_BOUNDS,
  maxRecorded: COMPARE_MAX_RECORDED,
  runDiffChars: RUN_DIFF_MAX_CHARS,
};

/**
 * The file changes of one run (docs/approvals.md, "Writes and their diffs"): each host-mediated write as it happens,
 * and, from a snapshot of the run's writable folders taken before its runner starts and another after it ended, what
 * the runner wrote directly (a harness's own tools, its shell). Texts are redacted before they are diffed, so a
 * secret split over lines by the diff's `+`/`-` marks is still caught; the journal redacts the record again.
 */
export class RunChanges {
  /** A host-mediated write reads the old file whole up to this size (hashed, diffed when small text). */
  readonly readUpTo = WRITE_HASH_MAX_BYTES;
  private start: Snapshot | undefined;
  private diffChars = 0;

  constructor(
    private readonly sink: ChangeSink,
    private readonly redact: (text: string) => string,
    private readonly roots: SnapshotRoot[],
    private readonly bounds: RunChangeBounds = RUN_CHANGE_BOUNDS,
  ) {}

  /**
   * Take the snapshot the run's end is compared with (before the runner starts), or use `taken`: one of the same
   * roots taken earlier, before the runner's process started (a warm slot's, docs/warm-pool.md).
   */
  async begin(taken?: Snapshot): Promise<void> {
    this.start = taken ?? (await takeSnapshot(this.roots, this.bounds.snapshot));
  }

  /** Record one `fs/write` the host made: the file as it found it (undefined: created) and what it wrote. */
  written(
    path: string,
    previous: PreviousContent | undefined,
    content: Buffer,
    mode: 'create' | 'overwrite' | 'append',
  ) {
    const before = previous && fileSide(previous.size, previous.bytes);
    const whole =
      mode !== 'append'
        ? content
        : previous?.bytes
          ? Buffer.concat([previous.bytes, content])
          : previous
            ? undefined
            : content;
    const after = fileSide((mode === 'append' ? (previous?.size ?? 0) : 0) + content.length, whole);
    this.sink.fileChanges([this.describe(path, 'fs/write', before ? 'changed' : 'added', before, after)]);
  }

  /** Compare the run's folders now (the runner is over) with the snapshot and record what changed, within the caps. */
  async finish(): Promise<void> {
    const start = this.start;
    if (!start) return;
    this.start = undefined;
    // Unchanged files are not read again (their start's hash and text stand).
    const end = await takeSnapshot(this.roots, this.bounds.snapshot, start);
    const { changes, uncompared } = compareSnapshots(start, end);
    const recorded = changes
      .slice(0, this.bounds.maxRecorded)
      .map((c) =>
        this.describe(c.path, 'run', c.change, c.before && entrySide(c.before), c.after && entrySide(c.after)),
      );
    const notRecorded = changes.length - recorded.length;
    const capped = [...new Set([...start.capped, ...end.capped])];
    const summary = [
      ...(notRecorded > 0 ? [`${notRecorded} more files changed, not diffed (the first ${recorded.length} are)`] : []),
      ...(uncompared > 0 ? [`${uncompared} paths seen by one walk only, not compared`] : []),
      ...(capped.length > 0 ? [`caps hit: ${capped.join('; ')}`] : []),
    ].join('; ');
    this.sink.fileChanges(recorded, {
      roots: this.roots.map((r) => r.label || '.'),
      entries: { before: start.entries.size, after: end.entries.size },
      changed: changes.length,
      recorded: recorded.length,
      notRecorded,
      uncompared,
      capped,
      ...(summary ? { summary } : {}),
    });
  }

  /** A change's record: both versions, and the diff of the redacted texts when both sides are text and in budget. */
  private describe(
    path: string,
    via: 'fs/write' | 'run',
    change: 'added' | 'changed' | 'deleted',
    before: Side | undefined,
    after: Side | undefined,
  ): EventData<'file.changed'> {
    const record: EventData<'file.changed'> = {
      path,
      via,
      change,
      ...(before ? { before: before.version } : {}),
      ...(after ? { after: after.version } : {}),
    };
    const sides = [before, after].filter((s): s is Side => s !== undefined);
    // A link's record is its target; an `other` (FIFO, socket, device) has no content.
    if (sides.some((s) => s.version.kind !== 'file')) return record;
    // A credential file's values may be ones the host never learnt (it was not read through fs/read): never diffed.
    if (isSecretPath(path)) return { ...record, notDiffed: 'a secret path: never diffed' };
    const missing = sides.find((s) => s.text === undefined);
    if (missing) return { ...record, notDiffed: missing.notKept ?? 'content not known' };
    const usedUp = { ...record, notDiffed: `the run's ${this.bounds.runDiffChars} characters of diffs are used up` };
    if (this.diffChars >= this.bounds.runDiffChars) return usedUp;
    const room = this.bounds.runDiffChars - this.diffChars;
    const diff = unifiedDiff(this.redact(before?.text ?? ''), this.redact(after?.text ?? ''), {
      maxChars: Math.min(room, DIFF_MAX_CHARS),
    });
    if (!diff.ok) return { ...record, notDiffed: diff.reason };
    // Cut by what is left of the run's budget (not the per-diff cap): the budget is used up from here on.
    const cutByRun = diff.truncated && room < DIFF_MAX_CHARS;
    this.diffChars = cutByRun ? this.bounds.runDiffChars : this.diffChars + diff.diff.length;
    if (diff.truncated && diff.diff === '') return usedUp;
    return { ...record, diff: diff.diff, ...(diff.truncated ? { diffTruncated: true } : {}) };
  }
}

/** A file side from its size and (when read whole) its bytes: hashed, its text kept when small text. */
function fileSide(size: number, bytes: Buffer | undefined): Side {
  if (!bytes)
    return { version: { kind: 'file', size, sha256: null }, notKept: `larger than ${WRITE_HASH_MAX_BYTES} bytes` };
  const version: FileVersion = { kind: 'file', size, sha256: sha256(bytes) };
  if (bytes.length > KEEP_FILE_MAX_BYTES) return { version, notKept: `larger than ${KEEP_FILE_MAX_BYTES} bytes` };
  const text = asText(bytes);
  return text === undefined ? { version, notKept: 'binary' } : { version, text };
}

/** A snapshot entry as a side of a change (no inode or times: they say nothing to a reader). */
function entrySide(entry: NonNullable<ReturnType<Snapshot['entries']['get']>>): Side {
  const { kind, size, sha256: hash, mode, target, text, notKept } = entry;
  return {
    version: {
      kind: kind === 'dir' ? 'other' : kind,
      size,
      sha256: hash,
      mode,
      ...(target !== undefined ? { target } : {}),
    },
    ...(text !== undefined ? { text } : {}),
    ...(notKept !== undefined ? { notKept } : {}),
  };
}
