// A run's file changes end to end (docs/approvals.md, "Writes and their diffs"): a real runner in the bwrap sandbox
// writes through the host (`fs/write`, recorded as it happens) and directly in its workspace with node fs, as a
// harness's own tools do (found by comparing the workspace with the snapshot taken before the runner started). Links
// are recorded, never read through; binary files get sizes and hashes; past the caps a summary says what was left
// out; and a configured secret the runner writes is in no stored or streamed byte.
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunOutcome } from '../../host/process/outcome.js';
import type { EventData, StoredEvent } from '../../host/state/events.js';
import { chatEvent, tempHost } from '../helpers/host.js';
import { paddock } from '../helpers/cli.js';
import { rawDb } from '../helpers/rawDb.js';
import { applyUnifiedDiff } from '../helpers/applyUnifiedDiff.js';
import { filesContaining } from '../helpers/canary.js';

// A configured secret (a model resource's key) with no recognisable shape: only the registered value catches it.
const CANARY = 'canary-diff-secret-6f1e2d3c4b';
const OUTSIDE = `outside-file-${'Z'.repeat(12)}`;
const host = tempHost({ limits: { wallClockMs: 60_000 } });
const streamed: StoredEvent[] = [];
let outsideFile: string;

beforeAll(() => {
  process.env.PADDOCK_DIFF_CANARY_KEY = CANARY;
  outsideFile = join(mkdtempSync(join(tmpdir(), 'paddock-outside-')), 'secret.txt');
  writeFileSync(outsideFile, `${OUTSIDE}\n`);
  host.apply({
    resources: {
      models: [{ id: 'keyed', provider: 'anthropic', model: 'm', apiKey: { env: 'PADDOCK_DIFF_CANARY_KEY' } }],
    },
    bindings: [
      { id: 'writer', runner: 'writes-files', route: { bot: 'writer' }, sandbox: 'bwrap', grants: { fs: 'readwrite' } },
    ],
  });
  host.store.subscribe((event) => void streamed.push(event));
});
afterAll(() => host.close());

async function run(plan: unknown): Promise<{ runId: string; outcome: RunOutcome }> {
  const ticket = await host.dispatcher.dispatch(
    chatEvent({ bot: 'writer', text: JSON.stringify(plan), conversation: { id: `c-${Math.random()}` } }),
  );
  if (ticket.status === 'duplicate') throw new Error('duplicate');
  const outcome = await ticket.done;
  expect(outcome.status, outcome.reason).toBe('completed');
  return { runId: ticket.runId, outcome };
}
const eventsOf = <T extends 'file.changed' | 'workspace.compared'>(runId: string, type: T) =>
  (
    rawDb(host.store)
      .prepare('SELECT data FROM events WHERE run_id = ? AND type = ? ORDER BY seq')
      .pluck()
      .all(runId, type) as string[]
  ).map((d) => JSON.parse(d) as EventData<T>);

describe('a run’s writes are recorded with a diff', () => {
  it('fs/write: each host write is a file.changed with the diff from what the file held', async () => {
    const { runId } = await run({
      host: [
        { path: 'out/notes.md', content: '# notes\nfirst\n', mode: 'create' },
        { path: 'out/notes.md', content: '# notes\nsecond\n' },
        { path: 'out/notes.md', content: 'third\n', mode: 'append' },
      ],
    });
    const writes = eventsOf(runId, 'file.changed').filter((e) => e.via === 'fs/write');
    expect(writes.map((w) => [w.path, w.change, w.diff])).toEqual([
      ['out/notes.md', 'added', '@@ -0,0 +1,2 @@\n+# notes\n+first\n'],
      ['out/notes.md', 'changed', '@@ -1,2 +1,2 @@\n # notes\n-first\n+second\n'],
      ['out/notes.md', 'changed', '@@ -1,2 +1,3 @@\n # notes\n second\n+third\n'],
    ]);
    // The run's net change is recorded at its end too, from the snapshot taken before the runner started.
    const net = eventsOf(runId, 'file.changed').filter((e) => e.via === 'run');
    expect(net.map((n) => [n.path, n.change])).toEqual([['out/notes.md', 'added']]);
    expect(applyUnifiedDiff('', net[0]!.diff!)).toBe('# notes\nsecond\nthird\n');
    // It lands before the run's end, so a run's stream (which stops at run.ended) carries it.
    const types = rawDb(host.store)
      .prepare('SELECT type FROM events WHERE run_id = ? ORDER BY seq')
      .pluck()
      .all(runId) as string[];
    const lifecycle = types.filter((t) => !t.startsWith('effect.')); // the workspace's removal is logged after the end
    expect(lifecycle.slice(-3)).toEqual(['file.changed', 'workspace.compared', 'run.ended']);
  });

  it('direct writes (node fs, as a harness’s tools) are found at the run’s end, with diffs', async () => {
    const { runId } = await run({
      direct: [
        { path: 'src/app.ts', content: 'export const a = 1;\n' },
        { path: 'home/.cache/x', content: 'cached\n' },
      ],
    });
    const changed = eventsOf(runId, 'file.changed');
    expect(changed.map((c) => [c.via, c.path, c.change, c.diff])).toEqual([
      ['run', 'home/.cache/x', 'added', '@@ -0,0 +1,1 @@\n+cached\n'],
      ['run', 'src/app.ts', 'added', '@@ -0,0 +1,1 @@\n+export const a = 1;\n'],
    ]);
    expect(eventsOf(runId, 'workspace.compared')).toEqual([
      expect.objectContaining({ roots: ['.'], changed: 2, recorded: 2, notRecorded: 0, capped: [] }),
    ]);
  });

  it('a link planted to a file outside is recorded with its target text and never read', async () => {
    const { runId } = await run({ direct: [{ path: 'out/escape', link: outsideFile }] });
    expect(eventsOf(runId, 'file.changed')).toEqual([
      expect.objectContaining({
        path: 'out/escape',
        change: 'added',
        after: expect.objectContaining({ kind: 'link', target: outsideFile, sha256: null }),
      }),
    ]);
    expect(JSON.stringify(eventsOf(runId, 'file.changed'))).not.toContain(OUTSIDE);
  });

  it('binary files, through the host and directly, are recorded by sizes and hashes only', async () => {
    const bytes = Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0, 0, 1, 2]);
    const { runId } = await run({
      host: [{ path: 'out/host.bin', content: bytes.toString('base64'), encoding: 'base64' }],
      direct: [{ path: 'out/direct.bin', base64: bytes.toString('base64') }],
    });
    const changed = eventsOf(runId, 'file.changed');
    expect(changed.length).toBe(3);
    for (const c of changed) {
      expect(c).toMatchObject({ change: 'added', notDiffed: 'binary', after: { kind: 'file', size: 8 } });
      expect(c.diff).toBeUndefined();
      expect(c.after!.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
    }
  });

  it('past the recorded-changes cap, a summary says how many more files changed, not diffed', async () => {
    const { runId } = await run({ direct: [{ path: 'out/many/f', count: 230 }] });
    expect(eventsOf(runId, 'file.changed')).toHaveLength(200);
    const [summary] = eventsOf(runId, 'workspace.compared');
    expect(summary).toMatchObject({ changed: 230, recorded: 200, notRecorded: 30 });
    expect(summary!.summary).toBe('30 more files changed, not diffed (the first 200 are)');
    // What an admin sees: `paddock runs show` prints the summary and the diffs.
    const shown = await paddock(['runs', 'show', runId], { dataDir: host.dataDir });
    expect(shown.stdout).toContain('30 more files changed, not diffed (the first 200 are)');
    expect(shown.stdout).toMatch(/file\.changed out\/many\/f-0000 added \(run\)\n\s+@@ -0,0 \+1,1 @@\n\s+\+0/);
  });

  it('a configured secret written to files is in no stored or streamed byte', async () => {
    const before = streamed.length;
    const { runId } = await run({
      host: [{ path: 'out/config.env', content: `API_KEY=${CANARY}\n` }],
      direct: [
        { path: 'out/direct.env', content: `TOKEN=${CANARY}\nOTHER=1\n` },
        { path: 'out/split.txt', content: `${CANARY.slice(0, 10)}\n${CANARY.slice(10)}\n${CANARY}\n` },
      ],
    });
    const changed = eventsOf(runId, 'file.changed');
    expect(changed.map((c) => c.path).sort()).toEqual([
      'out/config.env',
      'out/config.env',
      'out/direct.env',
      'out/split.txt',
    ]);
    expect(changed.find((c) => c.path === 'out/direct.env')!.diff).toBe(
      '@@ -0,0 +1,2 @@\n+TOKEN=[REDACTED]\n+OTHER=1\n',
    );
    // Every stored byte (the SQLite file and its WAL, the session folders) and every streamed event.
    expect(filesContaining(host.dataDir, CANARY)).toEqual([]);
    const stream = JSON.stringify(streamed.slice(before));
    expect(stream).toContain('file.changed');
    expect(stream).not.toContain(CANARY);
  });
});
