import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { RunOutcome } from '../../host/process/outcome.js';
import { ErrorCodes } from '../../sdk/protocol/errorCodes.js';
import { jsonLines, paddock } from '../helpers/cli.js';
import type { ChatEventInput } from '../../sdk/protocol/types.js';
import { chatEvent as anyChatEvent, tempHost } from '../helpers/host.js';

/** A chat event typed for the run service (the helper's is loosely typed for dispatch). */
const chatEvent = (over: Parameters<typeof anyChatEvent>[0]) => anyChatEvent(over) as ChatEventInput;

// Issue 11, items 6 and 7: a runner hands the host's fs requests things that are not regular
// files, and races a directory against a symlink; the host's event loop stays free, nothing is
// opened that is not a regular file, and nothing is created outside the workspace.

const report = (outcome: RunOutcome) =>
  JSON.parse((outcome.result!.output!.parts[0] as { text: string }).text) as Record<string, unknown>;
const notFile = (method: string, path: string, kind: string) => ({
  code: ErrorCodes.PolicyDenied,
  deniedBy: 'pathPolicy.not_file',
  message: `${method}: ${path} is ${kind}, not a regular file; only regular files are read or written`,
});

describe('fs requests on FIFOs, sockets, devices and sparse files (item 6)', () => {
  const h = tempHost();
  afterAll(() => h.close());

  it('are refused by file type without being opened, while a concurrent run streams on', async () => {
    let normalUpdates = 0;
    const [attack, normal] = await Promise.all([
      h.runs.runAdHoc({
        runner: 'feeds-special-files-to-fs',
        event: chatEvent({ conversation: { id: 'a1' } }),
        config: { actions: ['fifo', 'socket', 'device', 'sparse'] },
      }),
      h.runs.runAdHoc({
        runner: 'echo',
        event: chatEvent({ text: 'a b c d e f', conversation: { id: 'a2' } }),
        config: { delayMs: 100 },
        onUpdate: () => (normalUpdates += 1),
      }),
    ]);
    expect(normal.status, normal.reason).toBe('completed');
    // six deltas and the message (plus the redactor's held-back tail, when any)
    expect(normalUpdates).toBeGreaterThanOrEqual(7);
    expect(attack.status, attack.reason).toBe('completed');
    const r = report(attack);
    expect(r).toMatchObject({
      'write:fifo': notFile('fs/write', 'fifo', 'a FIFO (named pipe)'),
      'append:fifo': notFile('fs/write', 'fifo', 'a FIFO (named pipe)'),
      'read:fifo': notFile('fs/read', 'fifo', 'a FIFO (named pipe)'),
      'write:fifo-with-reader': notFile('fs/write', 'fifo', 'a FIFO (named pipe)'),
      'read:fifo-with-writer': notFile('fs/read', 'fifo', 'a FIFO (named pipe)'),
      'write:socket': notFile('fs/write', 'sock', 'a socket'),
      'read:socket': notFile('fs/read', 'sock', 'a socket'),
      'read:link-to-dev-zero': { code: ErrorCodes.PolicyDenied, deniedBy: 'pathPolicy.symlink' },
      // The machines that run these tests run them as root, so mknod works: a device is refused too.
      'write:char-device': notFile('fs/write', 'null', 'a character device'),
      'read:char-device': notFile('fs/read', 'null', 'a character device'),
      'read:sparse': { size: 1000 * 1024 ** 2, truncated: true, bytes: 4 * 1024 * 1024 },
    });
  });

  it('the wall clock still fires while a runner that probed a FIFO hangs', async () => {
    const short = tempHost({ limits: { wallClockMs: 4_000 } });
    try {
      let probed = '';
      const outcome = await short.runs.runAdHoc({
        runner: 'feeds-special-files-to-fs',
        event: chatEvent({ conversation: { id: 'w1' } }),
        config: { actions: ['fifo', 'hang'] },
        onUpdate: (u) => (probed = u.kind === 'progress' ? u.message : probed),
      });
      expect(probed).toContain('"write:fifo":{"code":-32003');
      expect(outcome.status).toBe('timed_out');
      expect(outcome.detail.timeout).toBe('wall_clock');
    } finally {
      await short.close();
    }
  });

  it('paddock run answers Ctrl-C while a runner that probed a FIFO hangs', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'paddock-fifo-cli-'));
    const child = paddock(
      [
        'run',
        '--runner',
        'test/fixtures/runnerDirs/feeds-special-files-to-fs',
        '--text',
        'x',
        '--config',
        '{"actions":["fifo","hang"]}',
        '--json',
      ],
      { dataDir },
    );
    let seen = '';
    await new Promise<void>((resolve) => {
      child.stdout!.on('data', (chunk: Buffer) => {
        seen += chunk.toString();
        if (seen.includes('probed:')) resolve();
      });
    });
    child.kill('SIGINT');
    const r = await child;
    expect(r.exitCode, r.stderr).toBe(130);
    const outcome = jsonLines(r.stdout).find((l) => l.type === 'outcome')!.outcome as {
      status: string;
      reason: string;
    };
    expect(outcome.status).toBe('cancelled');
  }, 120_000);
});

describe('the dir↔symlink swap race creates nothing outside the workspace (item 7)', () => {
  const h = tempHost();
  afterAll(() => h.close());

  it.each(['process', 'bwrap'] as const)(
    '%s backend: thousands of create requests through a directory swapped with a link in a tight loop',
    async (sandbox) => {
      const target = mkdtempSync(join(tmpdir(), 'paddock-race-target-'));
      h.apply({
        bindings: [
          {
            id: `race-${sandbox}`,
            runner: 'feeds-special-files-to-fs',
            route: { platform: 'telegram', bot: `race-${sandbox}` },
            sandbox,
            config: { actions: ['race'], target, count: 3000 },
            grants: { fs: 'readwrite' },
            limits: { requestsPerSecond: 5_000, maxRequests: 20_000 },
          },
        ],
      });
      const ticket = await h.dispatcher.dispatch(chatEvent({ bot: `race-${sandbox}` }));
      if (ticket.status === 'duplicate') throw new Error('duplicate');
      const outcome = await ticket.done;
      expect(outcome.status, outcome.reason).toBe('completed');
      const r = report(outcome);
      // Nothing at all appeared in the folder the link points at: no directory, no empty file.
      expect(readdirSync(target)).toEqual([]);
      const tally = r.race as Record<string, number>;
      const total = Object.values(tally).reduce((a, b) => a + b, 0);
      expect(total).toBe(3000);
      // The race really ran both ways: some writes landed in the real directory, some met the link.
      expect(tally.ok, JSON.stringify(tally)).toBeGreaterThan(0);
      expect(tally[`${ErrorCodes.PolicyDenied}:pathPolicy.symlink`], JSON.stringify(tally)).toBeGreaterThan(0);
      for (const key of Object.keys(tally))
        expect(['ok', `${ErrorCodes.PolicyDenied}:pathPolicy.symlink`]).toContain(key);
      // Legitimate writes still work after it.
      expect(r['write:after-race']).toBe('ok');
      expect(r['read:after-race']).toBe('ok');
    },
    180_000,
  );
});
