// When the claude-code runner may close Claude Code's stdin (runners/claude-code/userLines.ts): only at a `result`
// after the CLI echoed every user line it was given, so a message delivered mid-run is never cut off.
import { describe, expect, it } from 'vitest';
import { UserLines } from '../../../runners/claude-code/userLines.js';

const replay = (text: string) => ({
  type: 'user',
  isReplay: true,
  message: { role: 'user', content: [{ type: 'text', text }] },
});
const result = { type: 'result', subtype: 'success', result: 'ok' };

describe('UserLines (Claude Code stdin)', () => {
  it('one prompt: stdin closes at the result once the prompt was echoed', () => {
    const lines = new UserLines('hi');
    expect(lines.initial).toEqual([
      { type: 'user', message: { role: 'user', content: [{ type: 'text', text: 'hi' }] } },
    ]);
    expect(lines.endAfter(replay('hi'))).toBe(false);
    expect(lines.endAfter(result)).toBe(true);
  });

  it('a message still waiting at a result keeps stdin open until its own result; after the end none is taken', () => {
    const lines = new UserLines('first');
    const written: unknown[] = [];
    lines.endAfter(replay('first'));
    expect(lines.add('second', (v) => (written.push(v), true))).toBe(true);
    expect(lines.endAfter(result)).toBe(false); // "second" was not taken yet: it runs as the next turn
    expect(lines.endAfter(replay('second'))).toBe(false);
    expect(lines.endAfter(result)).toBe(true);
    expect(lines.add('third', (v) => (written.push(v), true))).toBe(false);
    expect(written).toHaveLength(1);
    expect(lines.added).toEqual(['second']);
  });

  it('a message folded into the running turn (echoed before the result) needs no result of its own', () => {
    const lines = new UserLines('first');
    lines.add('second', () => true);
    lines.endAfter(replay('first'));
    lines.endAfter({ type: 'user', message: { content: [{ type: 'tool_result', content: 'x' }] } });
    lines.endAfter(replay('second'));
    expect(lines.endAfter(result)).toBe(true);
  });

  it('a write the pipe refuses is not counted; a retried CLI starts with the messages the first one took', () => {
    const lines = new UserLines('first');
    expect(lines.add('lost pipe', () => false)).toBe(false);
    lines.add('kept', () => true);
    const retry = new UserLines('first', lines.added);
    expect(retry.initial.map((l) => (l.message as { content: { text: string }[] }).content[0]!.text)).toEqual([
      'first',
      'kept',
    ]);
    retry.endAfter(replay('first'));
    expect(retry.endAfter(result)).toBe(false);
    retry.endAfter(replay('kept'));
    expect(retry.endAfter(result)).toBe(true);
  });
});
