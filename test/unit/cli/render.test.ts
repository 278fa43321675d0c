import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { humanRenderer } from '../../../host/cli/render.js';

function capture() {
  const out = new PassThrough() as PassThrough & { isTTY?: boolean };
  let text = '';
  out.on('data', (c: Buffer) => (text += c.toString()));
  return { out, text: () => text };
}

describe('human renderer: tool lines', () => {
  it('names the tool when a call finishes, never its opaque call id (issue 11, item 19c)', () => {
    const { out, text } = capture();
    const r = humanRenderer(out as never);
    r.update({ kind: 'tool.started', toolCallId: 'toolu_01ABCDEF', name: 'Bash', input: { command: 'echo hi' } }, 1);
    r.update({ kind: 'tool.started', toolCallId: 'call_2', name: 'Read' }, 2);
    r.update({ kind: 'tool.finished', toolCallId: 'call_2', status: 'error', error: 'no such file' }, 3);
    r.update({ kind: 'tool.finished', toolCallId: 'toolu_01ABCDEF', status: 'ok' }, 4);
    r.update({ kind: 'tool.finished', toolCallId: 'never_started', status: 'ok' }, 5);
    const lines = text().trim().split('\n');
    expect(lines).toEqual(['⚙ Bash — echo hi', '⚙ Read', '⚙ Read error: no such file', '⚙ Bash ok', '⚙ tool ok']);
    expect(text()).not.toContain('toolu_01ABCDEF');
  });
});
