import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunOutcome } from '../../host/process/outcome.js';
import { jsonLines, paddock } from '../helpers/cli.js';

// examples/ are runnable stories, each checked here end to end through the real CLI.
describe('examples/hello-runner', () => {
  it('greets through `paddock run`, streaming word by word', async () => {
    const r = await paddock(['run', '--runner', 'examples/hello-runner', '--text', 'Ada', '--json'], {
      dataDir: mkdtempSync(join(tmpdir(), 'paddock-example-')),
    });
    expect(r.exitCode).toBe(0);
    const lines = jsonLines(r.stdout);
    const text = lines
      .filter((l) => l.type === 'update')
      .map((l) => (l.update as { text?: string }).text ?? '')
      .join('');
    expect(text).toBe('Hello, Ada! Nice to meet you.');
    const outcome = lines.find((l) => l.type === 'outcome')!.outcome as RunOutcome;
    expect(outcome.result?.output?.parts).toEqual([{ type: 'text', text: 'Hello, Ada! Nice to meet you.' }]);
    expect(outcome.stderrTail).toContain('"msg":"greeted"'); // its pino log went to stderr, not stdout
  });

  it('is about 20 lines: runner.ts plus index.ts', async () => {
    const { readFileSync } = await import('node:fs');
    const { repoPath } = await import('../helpers/fixtures.js');
    const lines = ['runner.ts', 'index.ts'].map(
      (f) =>
        readFileSync(repoPath(`examples/hello-runner/${f}`), 'utf8')
          .trim()
          .split('\n').length,
    );
    expect(lines[0]! + lines[1]!).toBeLessThanOrEqual(26);
  });
});
