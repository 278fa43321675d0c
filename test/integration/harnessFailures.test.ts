// Failure modes of a wrapped CLI that the real binaries cannot produce on demand, with a FAKE
// Claude Code CLI (test/fixtures/fakeClaude.mjs) installed in a throwaway harness folder: crash
// mid-stream, hang, flood, malformed lines, an unexpected version. Each fails (or survives) its
// run with a reason; the host and the next run are unaffected; no process is left.
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunOutcome } from '../../host/process/outcome.js';
import type { Update } from '../../sdk/protocol/types.js';
import { repoPath } from '../helpers/fixtures.js';
import { processesWith } from '../helpers/procs.js';
import { chatEvent, tempHost } from '../helpers/host.js';
import { rawDb } from '../helpers/rawDb.js';

const harnessDir = mkdtempSync(join(tmpdir(), 'paddock-fake-harness-'));
chmodSync(harnessDir, 0o755); // readable by the run uid, like the real .harness (docs/admin-guide.md "Run identity")
const bin = join(harnessDir, 'node_modules', '@anthropic-ai', 'claude-code', 'bin');
mkdirSync(bin, { recursive: true });
writeFileSync(
  join(bin, 'claude.exe'),
  `#!/usr/bin/env node\n${readFileSync(repoPath('test/fixtures/fakeClaude.mjs'), 'utf8')}`,
);
chmodSync(join(bin, 'claude.exe'), 0o755);

const host = tempHost({ harnessDir, limits: { wallClockMs: 60_000 } });
afterAll(() => host.close());

const fakeProcesses = () => processesWith(harnessDir);

async function dispatch(bot: string, text: string): Promise<{ outcome: RunOutcome; updates: Update[] }> {
  const updates: Update[] = [];
  const ticket = await host.dispatcher.dispatch(chatEvent({ bot, text, conversation: { id: `${bot}-${text}` } }), {
    onUpdate: (u) => updates.push(u),
  });
  if (ticket.status === 'duplicate') throw new Error('duplicate');
  return { outcome: await ticket.done, updates };
}

describe('claude-code runner against a FAKE CLI (failure modes)', () => {
  beforeAll(() => {
    const binding = (id: string, limits: Record<string, unknown> = {}) => ({
      id,
      runner: 'claude-code',
      route: { bot: id },
      sandbox: 'bwrap',
      grants: { models: ['sm'] },
      limits,
    });
    host.apply({
      resources: { models: [{ id: 'sm', provider: 'scripted', model: 'scripted-1' }] },
      bindings: [
        binding('fake'),
        binding('fake-hang', { wallClockMs: 3_000 }),
        binding('fake-flood', { maxUpdates: 500 }),
      ],
    });
  });

  it("a crash mid-stream fails the run with the reason and the CLI's stderr; nothing is saved for resume", async () => {
    const { outcome, updates } = await dispatch('fake', 'CRASH');
    expect(outcome.status).toBe('failed');
    expect(outcome.reason).toMatch(/claude ended without a result line \(exit 139\).*segmentation fault \(simulated\)/);
    expect(updates).toContainEqual(
      expect.objectContaining({ kind: 'message', parts: [{ type: 'text', text: 'half an answer' }] }),
    );
    expect(
      rawDb(host.store)
        .prepare("SELECT COUNT(*) FROM events WHERE type = 'external.saved' AND run_id = ?")
        .pluck()
        .get(outcome.runId),
    ).toBe(0);
    expect(fakeProcesses()).toEqual([]);
  });

  it('a hang is stopped by the wall-clock limit, and the whole tree dies', async () => {
    const { outcome } = await dispatch('fake-hang', 'HANG');
    expect(outcome.status).toBe('timed_out');
    expect(fakeProcesses()).toEqual([]);
  });

  it('a flood of lines hits the update quota: the run ends quota_exceeded, the host is fine', async () => {
    const { outcome } = await dispatch('fake-flood', 'FLOOD');
    expect(outcome.status).toBe('quota_exceeded');
    expect(fakeProcesses()).toEqual([]);
    expect((await dispatch('fake', 'hello')).outcome.status).toBe('completed');
  });

  it('malformed lines are kept as logs and the run still completes', async () => {
    const { outcome, updates } = await dispatch('fake', 'MALFORMED');
    expect(outcome.status, outcome.reason).toBe('completed');
    expect((outcome.result?.output?.parts[0] as { text: string }).text).toBe('survived malformed lines');
    // Exactly the two lines that are not JSON are reported as such; every JSON line was mapped.
    const notJson = updates
      .filter((u) => u.kind === 'log' && u.message.startsWith('claude (not JSON)'))
      .map((u) => (u as { message: string }).message);
    expect(notJson).toEqual(['claude (not JSON): this line is not JSON at all', 'claude (not JSON): {"truncated": ']);
  });

  it('an unexpected version is said in the run, which still works', async () => {
    const { outcome, updates } = await dispatch('fake', 'VERSION:3.0.0');
    expect(outcome.status, outcome.reason).toBe('completed');
    expect(updates).toContainEqual(
      expect.objectContaining({
        kind: 'log',
        level: 'warn',
        message: expect.stringContaining('claude 3.0.0 is not the tested 2.1.332'),
      }),
    );
  });
});
