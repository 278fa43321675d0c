// The bounds of recording a run's file changes (docs/approvals.md, "Writes and their diffs"): a huge workspace, a huge
// file or an adversarial pair of files costs the host at most these, whatever the run did.

/** Most entries (files, folders, links) one workspace snapshot walks, over all its roots. */
export const SNAPSHOT_MAX_ENTRIES = 20_000;
/** Deepest folder a snapshot walks into (the walk holds one descriptor per level). */
export const SNAPSHOT_MAX_DEPTH = 32;
/** Most bytes one snapshot reads to hash files; a file beyond it is compared by size, mode and times. */
export const SNAPSHOT_MAX_HASHED_BYTES = 256 * 1024 * 1024;
/** Largest file whose text is kept (a snapshot's, or the old content of a host-mediated write) to be diffed. */
export const KEEP_FILE_MAX_BYTES = 256 * 1024;
/** Most text one snapshot keeps in memory, over all its files. */
export const KEEP_TOTAL_MAX_BYTES = 16 * 1024 * 1024;
/** Largest old file a host-mediated write reads to hash it (its sha256 is null beyond). */
export const WRITE_HASH_MAX_BYTES = 64 * 1024 * 1024;
/** Most `file.changed` events one end-of-run comparison records; the rest are counted in its summary. */
export const COMPARE_MAX_RECORDED = 200;
/** Most lines of either side a diff is computed over. */
export const DIFF_MAX_LINES = 20_000;
/** Most edits (lines removed plus added) a diff searches for before giving up: Myers' cost is lines × edits. */
export const DIFF_MAX_EDITS = 1_000;
/** Longest recorded diff, in characters; a longer one is cut at a line and marked truncated. */
export const DIFF_MAX_CHARS = 64 * 1024;
/** Most diff characters one run records in all; later changes are recorded with sizes and hashes only. */
export const RUN_DIFF_MAX_CHARS = 2 * 1024 * 1024;
