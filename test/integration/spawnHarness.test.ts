import { describe, expect, it } from 'vitest';
import { liveDescendants } from '../../sdk/process/procTable.js';
import { mapHarnessLine, spawnHarness, type HarnessLine } from '../../sdk/index.js';
import { runHarnessTurn } from '../../sdk/harness/harnessTurn.js';
import { isAlive, repoPath } from '../helpers/fixtures.js';

const FAKE_CLI = repoPath('test/fixtures/harness/fakeAgentCli.mjs');
const cli = (mode: string, extra: Partial<Parameters<typeof spawnHarness>[0]> = {}) =>
  spawnHarness({ command: process.execPath, args: [FAKE_CLI, mode], ...extra });

async function drain(lines: AsyncIterable<HarnessLine>): Promise<HarnessLine[]> {
  const all: HarnessLine[] = [];
  for await (const line of lines) all.push(line);
  return all;
}

describe('spawnHarness (against a fake agent CLI)', () => {
  it('parses JSONL leniently; unknown types and non-JSON lines become log updates', async () => {
    const h = cli('lines');
    const lines = await drain(h.lines);
    const exit = await h.exited;
    expect(exit).toMatchObject({ exitCode: 0, cancelled: false, truncated: false, droppedLines: 0 });
    expect(exit.stderrTail).toContain('a warning on stderr');
    const updates = lines.flatMap((line) =>
      mapHarnessLine(line, {
        assistant: (v) => [{ kind: 'message.delta', text: String(v.text) }],
        system: (v) =>
          v.subtype === 'init' ? [{ kind: 'progress', message: `session ${String(v.session_id)}` }] : undefined,
      }),
    );
    expect(updates).toEqual([
      { kind: 'progress', message: 'session sess-123' },
      { kind: 'log', level: 'info', message: 'Welcome banner, not JSON' },
      { kind: 'message.delta', text: 'hello' },
      {
        kind: 'log',
        level: 'info',
        message: '{"type":"rate_limit_event","retry":3}',
        data: { harnessType: 'rate_limit_event' },
      },
      { kind: 'log', level: 'info', message: '[1,2,3]' },
    ]);
  });

  it('gives the CLI a closed stdin (CLIs that wait on stdin would hang otherwise)', async () => {
    const h = cli('stdin');
    const lines = await drain(h.lines);
    expect(lines).toEqual([
      { type: 'json', value: { type: 'stdin', closed: true, bytes: 0 }, raw: expect.any(String) },
    ]);
  });

  it(
    'a conversation: the first lines on stdin, each answer as it settles; stdin closes after the end line and the ' +
      'CLI exits',
    async () => {
      const seen: Record<string, unknown>[] = [];
      let releaseFirst!: () => void;
      const firstHeld = new Promise<void>((resolve) => (releaseFirst = resolve));
      const exit = await runHarnessTurn({
        name: 'fake',
        command: process.execPath,
        args: [FAKE_CLI, 'converse'],
        map: (value) => {
          seen.push(value);
          return [];
        },
        emit: () => undefined,
        conversation: {
          initial: [{ type: 'user', message: { role: 'user', content: [{ type: 'text', text: 'hi' }] } }],
          answer: (value) => {
            if (value.type !== 'control_request') return undefined;
            const id = String(value.request_id);
            const response = { type: 'control_response', response: { subtype: 'success', request_id: id } };
            // r1's answer settles after r2's: answers are written in the order they settle.
            if (id === 'r1') return firstHeld.then(() => response);
            releaseFirst();
            return Promise.resolve(response);
          },
          endAfter: (value) => value.type === 'result',
        },
      });
      expect(exit).toMatchObject({ exitCode: 0, cancelled: false });
      expect(seen.at(-1)).toEqual({ type: 'eof', seen: ['user', 'r2', 'r1', 'result'] });
    },
  );

  it('caps stdout bytes: stops the CLI and says it truncated', async () => {
    const h = cli('flood', { maxStdoutBytes: 1024 * 1024 });
    const lines = await drain(h.lines);
    const exit = await h.exited;
    expect(exit.truncated).toBe(true);
    expect(exit.signal).toBe('SIGTERM');
    expect(lines.length).toBeLessThan(1100);
  });

  it('drops an over-long line and carries on', async () => {
    const h = cli('longline', { maxLineBytes: 1024 * 1024 });
    const lines = await drain(h.lines);
    expect((await h.exited).droppedLines).toBe(1);
    expect(lines.map((l) => (l.type === 'json' ? l.value.text : l.raw))).toEqual(['after']);
  });

  it('kills the CLI and its whole tree on cancel, TERM-ignoring grandchildren included', async () => {
    const controller = new AbortController();
    const h = cli('tree', { signal: controller.signal, killGraceMs: 300 });
    let pids: number[] = [];
    for await (const line of h.lines) {
      if (line.type === 'json' && line.value.type === 'pids') {
        pids = line.value.pids as number[];
        // wait until the stubborn shell has started its sleep
        while (liveDescendants(h.pid!).length < 3) await new Promise((r) => setTimeout(r, 10));
        const tree = [h.pid!, ...liveDescendants(h.pid!)];
        controller.abort();
        const exit = await h.exited; // resolves once the whole tree is gone
        expect(exit.cancelled).toBe(true);
        expect(tree.filter(isAlive)).toEqual([]);
      }
    }
    expect(pids).toHaveLength(2);
  });

  it('reports a CLI that cannot start instead of throwing', async () => {
    const h = spawnHarness({ command: '/nonexistent/agent-cli' });
    expect(await drain(h.lines)).toEqual([]);
    const exit = await h.exited;
    expect(exit.spawnError).toMatch(/ENOENT/);
  });
});
