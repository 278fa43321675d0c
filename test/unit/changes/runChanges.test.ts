import { execFileSync } from 'node:child_process';
import { chmodSync, linkSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RUN_CHANGE_BOUNDS, RunChanges, type ChangeSink } from '../../../host/changes/runChanges.js';
import { SNAPSHOT_BOUNDS } from '../../../host/changes/snapshot.js';
import type { EventData } from '../../../host/state/events.js';
import { applyUnifiedDiff } from '../../helpers/applyUnifiedDiff.js';

type Changed = EventData<'file.changed'>;
type Compared = EventData<'workspace.compared'>;

function recorder(bounds = RUN_CHANGE_BOUNDS, redact = (t: string) => t) {
  const base = mkdtempSync(join(tmpdir(), 'paddock-changes-'));
  const ws = join(base, 'ws');
  const outside = join(base, 'outside');
  mkdirSync(join(ws, 'out'), { recursive: true });
  mkdirSync(outside);
  const changes: Changed[] = [];
  const compared: Compared[] = [];
  const sink: ChangeSink = {
    fileChanges: (c, s) => {
      changes.push(...c);
      if (s) compared.push(s);
    },
  };
  return {
    ws,
    outside,
    changes,
    compared,
    make: () => new RunChanges(sink, redact, [{ label: '', path: ws }], bounds),
  };
}

describe('RunChanges: the run-end comparison', () => {
  it('records added, changed and deleted files with diffs that apply, and a summary of what was compared', async () => {
    const r = recorder();
    writeFileSync(join(r.ws, 'out/keep.txt'), 'same\n');
    writeFileSync(join(r.ws, 'out/edit.txt'), 'one\ntwo\nthree\n');
    writeFileSync(join(r.ws, 'gone.txt'), 'bye\n');
    const run = r.make();
    await run.begin();
    writeFileSync(join(r.ws, 'out/edit.txt'), 'one\nTWO\nthree\n');
    rmSync(join(r.ws, 'gone.txt'));
    mkdirSync(join(r.ws, 'new/deep'), { recursive: true });
    writeFileSync(join(r.ws, 'new/deep/made.md'), '# made\n');
    await run.finish();
    expect(r.changes.map((c) => [c.path, c.change, c.via])).toEqual([
      ['gone.txt', 'deleted', 'run'],
      ['new/deep/made.md', 'added', 'run'],
      ['out/edit.txt', 'changed', 'run'],
    ]);
    const edit = r.changes.find((c) => c.path === 'out/edit.txt')!;
    expect(applyUnifiedDiff('one\ntwo\nthree\n', edit.diff!)).toBe('one\nTWO\nthree\n');
    expect(edit.before).toMatchObject({ kind: 'file', size: 14, sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(r.changes[1]!.diff).toBe('@@ -0,0 +1,1 @@\n+# made\n');
    expect(r.changes[0]!.diff).toBe('@@ -1,1 +0,0 @@\n-bye\n');
    expect(r.compared).toEqual([
      expect.objectContaining({ roots: ['.'], changed: 3, recorded: 3, notRecorded: 0, uncompared: 0, capped: [] }),
    ]);
    expect(r.compared[0]!.summary).toBeUndefined();
  });

  it('the end does not read an unchanged file again: its hashing budget goes to what changed', async () => {
    // A budget the start spends whole on `a.bin`: were `a.bin` read again at the end, `b.bin` would go unhashed.
    const bounds = { ...RUN_CHANGE_BOUNDS, snapshot: { ...SNAPSHOT_BOUNDS, maxHashedBytes: 1_000 } };
    const r = recorder(bounds);
    writeFileSync(join(r.ws, 'a.bin'), Buffer.alloc(1_000, 1));
    const run = r.make();
    await run.begin();
    writeFileSync(join(r.ws, 'b.bin'), Buffer.alloc(500, 2));
    await run.finish();
    expect(r.changes).toEqual([
      expect.objectContaining({
        path: 'b.bin',
        change: 'added',
        after: expect.objectContaining({ sha256: expect.any(String) }),
      }),
    ]);
    expect(r.compared[0]!.capped).toEqual([]);
  });

  it('a binary file is recorded by sizes and hashes only; a mode change is a change', async () => {
    const r = recorder();
    writeFileSync(join(r.ws, 'blob.bin'), Buffer.from([0, 1, 2, 3]));
    writeFileSync(join(r.ws, 'run.sh'), 'echo hi\n');
    const run = r.make();
    await run.begin();
    writeFileSync(join(r.ws, 'blob.bin'), Buffer.from([0, 1, 2, 3, 4, 5]));
    chmodSync(join(r.ws, 'run.sh'), 0o755);
    await run.finish();
    const blob = r.changes.find((c) => c.path === 'blob.bin')!;
    expect(blob).toMatchObject({ change: 'changed', notDiffed: 'binary', before: { size: 4 }, after: { size: 6 } });
    expect(blob.diff).toBeUndefined();
    expect(blob.before!.sha256).not.toBe(blob.after!.sha256);
    const script = r.changes.find((c) => c.path === 'run.sh')!;
    expect(script).toMatchObject({ change: 'changed', after: { mode: 0o755 } });
    expect(script.diff).toBe('');
  });

  it('never follows a link: a link to a folder or file outside is recorded with its target, never read', async () => {
    const r = recorder();
    writeFileSync(join(r.outside, 'secret.txt'), 'TOP-SECRET-OUTSIDE\n');
    mkdirSync(join(r.outside, 'tree'));
    writeFileSync(join(r.outside, 'tree/inner.txt'), 'TOP-SECRET-INNER\n');
    const run = r.make();
    await run.begin();
    symlinkSync(join(r.outside, 'secret.txt'), join(r.ws, 'out/leak.txt'));
    symlinkSync(join(r.outside, 'tree'), join(r.ws, 'out/tree'));
    // A hard link (same filesystem here) is not read through either.
    linkSync(join(r.outside, 'secret.txt'), join(r.ws, 'out/hard.txt'));
    await run.finish();
    expect(r.changes.map((c) => c.path)).toEqual(['out/hard.txt', 'out/leak.txt', 'out/tree']);
    expect(r.changes.find((c) => c.path === 'out/leak.txt')).toMatchObject({
      change: 'added',
      after: { kind: 'link', target: join(r.outside, 'secret.txt'), sha256: null },
    });
    expect(r.changes.find((c) => c.path === 'out/hard.txt')).toMatchObject({
      after: { kind: 'file', sha256: null },
      notDiffed: expect.stringMatching(/hard link/),
    });
    expect(JSON.stringify(r.changes)).not.toMatch(/TOP-SECRET/);
  });

  it('a FIFO is recorded as other and never opened (the walk does not hang)', async () => {
    const r = recorder();
    const run = r.make();
    await run.begin();
    execFileSync('mkfifo', [join(r.ws, 'out/pipe')]);
    await run.finish();
    expect(r.changes).toEqual([
      expect.objectContaining({ path: 'out/pipe', change: 'added', after: expect.objectContaining({ kind: 'other' }) }),
    ]);
  });

  it('caps: past the recorded count the rest is summarised; past the entry cap paths are not compared', async () => {
    const r = recorder({ ...RUN_CHANGE_BOUNDS, maxRecorded: 3, snapshot: { ...SNAPSHOT_BOUNDS, maxEntries: 8 } });
    const run = r.make();
    await run.begin();
    for (let i = 0; i < 12; i++) writeFileSync(join(r.ws, 'out', `f${String(i).padStart(2, '0')}.txt`), `${i}\n`);
    await run.finish();
    expect(r.changes).toHaveLength(3);
    // The end walk saw 8 entries (out/ and 7 files); the start saw 1: 7 added, 3 recorded, 4 not; 5 never walked.
    expect(r.compared[0]).toMatchObject({ changed: 7, recorded: 3, notRecorded: 4, capped: ['more than 8 entries'] });
    expect(r.compared[0]!.summary).toBe(
      '4 more files changed, not diffed (the first 3 are); caps hit: more than 8 entries',
    );
  });

  it('caps: a file over the kept size and a snapshot past its hashing budget are compared without a diff', async () => {
    const bounds = { ...RUN_CHANGE_BOUNDS, snapshot: { ...SNAPSHOT_BOUNDS, keepFileBytes: 10, maxHashedBytes: 30 } };
    const r = recorder(bounds);
    writeFileSync(join(r.ws, 'a-big.txt'), 'x'.repeat(20));
    writeFileSync(join(r.ws, 'b-over-budget.txt'), 'y'.repeat(20));
    const run = r.make();
    await run.begin();
    writeFileSync(join(r.ws, 'a-big.txt'), 'z'.repeat(20));
    writeFileSync(join(r.ws, 'b-over-budget.txt'), 'w'.repeat(21));
    await run.finish();
    expect(r.changes).toEqual([
      expect.objectContaining({ path: 'a-big.txt', notDiffed: 'larger than 10 bytes' }),
      expect.objectContaining({
        path: 'b-over-budget.txt',
        after: expect.objectContaining({ sha256: null, size: 21 }),
      }),
    ]);
    expect(r.changes[1]!.notDiffed).toMatch(/hashing cap/);
  });

  it('diffs the redacted texts: a secret split over lines by the diff marks is still caught', async () => {
    const secret = 'line-one-secret\nline-two-secret';
    const r = recorder(RUN_CHANGE_BOUNDS, (t) => t.split(secret).join('[REDACTED]'));
    const run = r.make();
    await run.begin();
    writeFileSync(join(r.ws, 'notes.txt'), `-----BEGIN-----\n${secret}\n-----END-----\n`);
    await run.finish();
    expect(r.changes[0]!.diff).toBe('@@ -0,0 +1,3 @@\n+-----BEGIN-----\n+[REDACTED]\n+-----END-----\n');
  });

  it('a secret path (.env, ~/.ssh, cloud credentials) is never diffed, whatever the redactor knows', async () => {
    const r = recorder();
    const run = r.make();
    await run.begin();
    writeFileSync(join(r.ws, '.env'), 'UNLEARNT_TOKEN=abc123\n');
    mkdirSync(join(r.ws, 'home/.aws'), { recursive: true });
    writeFileSync(join(r.ws, 'home/.aws/credentials'), '[default]\nkey=abc123\n');
    await run.finish();
    run.written('out/.env.local', undefined, Buffer.from('X=abc123\n'), 'create');
    expect(r.changes.map((c) => [c.path, c.notDiffed])).toEqual([
      ['.env', 'a secret path: never diffed'],
      ['home/.aws/credentials', 'a secret path: never diffed'],
      ['out/.env.local', 'a secret path: never diffed'],
    ]);
    expect(JSON.stringify(r.changes)).not.toContain('abc123');
  });

  it('fs/write: created, overwritten and appended files get diffs; an unknown old content gets sizes only', () => {
    const r = recorder();
    const run = r.make();
    run.written('out/a.txt', undefined, Buffer.from('hello\n'), 'create');
    run.written('out/a.txt', { size: 6, bytes: Buffer.from('hello\n') }, Buffer.from('world\n'), 'append');
    run.written('out/b.txt', { size: 99_999_999 }, Buffer.from('new\n'), 'overwrite');
    run.written('out/c.txt', { size: 3, bytes: Buffer.from('old') }, Buffer.from([0, 255]), 'overwrite');
    expect(r.changes).toEqual([
      expect.objectContaining({ via: 'fs/write', change: 'added', diff: '@@ -0,0 +1,1 @@\n+hello\n' }),
      expect.objectContaining({
        change: 'changed',
        diff: '@@ -1,1 +1,2 @@\n hello\n+world\n',
        after: expect.objectContaining({ size: 12 }),
      }),
      expect.objectContaining({
        before: { kind: 'file', size: 99_999_999, sha256: null },
        notDiffed: expect.stringMatching(/larger/),
      }),
      expect.objectContaining({ path: 'out/c.txt', notDiffed: 'binary', after: expect.objectContaining({ size: 2 }) }),
    ]);
  });

  it("the run's diff budget: once used up, later changes are recorded with sizes and hashes only", () => {
    const r = recorder({ ...RUN_CHANGE_BOUNDS, runDiffChars: 30 });
    const run = r.make();
    run.written('one.txt', undefined, Buffer.from('a fairly long first line\n'), 'create');
    run.written('two.txt', undefined, Buffer.from('second\n'), 'create');
    expect(r.changes[0]).toMatchObject({ diff: '@@ -0,0 +1,1 @@\n', diffTruncated: true });
    expect(r.changes[1]).toMatchObject({ notDiffed: "the run's 30 characters of diffs are used up" });
    expect(r.changes[1]!.diff).toBeUndefined();
    // A diff too long for what is left gets none at all when not even its first line fits.
    const s = recorder({ ...RUN_CHANGE_BOUNDS, runDiffChars: 10 });
    s.make().written('x.txt', undefined, Buffer.from('hello\n'), 'create');
    expect(s.changes[0]).toMatchObject({ notDiffed: "the run's 10 characters of diffs are used up" });
  });
});
