import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createRunContext } from '../../../sdk/runner/context.js';
import { MessageSlot } from '../../../sdk/runner/messageSlot.js';
import { repoPath } from '../../helpers/fixtures.js';

const doc = readFileSync(repoPath('docs/runner-authoring.md'), 'utf8');
const section = (title: string) => doc.slice(doc.indexOf(title), doc.indexOf('\n#', doc.indexOf(title) + title.length));

describe('docs/runner-authoring.md stays true to the SDK', () => {
  it('"The ctx API" documents every host call of the run context', () => {
    const ctx = createRunContext({
      peer: {} as never,
      runInfo: { runId: 'run_x' } as never,
      resume: undefined,
      signal: new AbortController().signal,
      log: {} as never,
      deltaRoutes: new Map(),
      isOpen: () => true,
      messages: new MessageSlot(),
    }) as unknown as Record<string, unknown>;
    const calls = Object.entries(ctx)
      .filter(([, v]) => v !== null && typeof v === 'object' && Object.values(v).every((f) => typeof f === 'function'))
      .flatMap(([group, v]) => Object.keys(v as object).map((name) => `ctx.${group}.${name}(`));
    expect(calls.length).toBe(10);
    const table = section('### The ctx API');
    expect(calls.filter((c) => !table.includes(c))).toEqual([]);
  });

  it(
    '"The author\'s API" names only what paddock/sdk and ' + 'paddock/sdk/testing export, and every runtime export',
    async () => {
      const table = section("### The author's API");
      // The second column of each row (| import | exports | for |) lists the exports.
      const cells = table
        .split('\n')
        .filter((l) => l.startsWith('| `paddock/'))
        .map((l) => l.split(' | ')[1] ?? '');
      expect(cells.length).toBeGreaterThanOrEqual(5);
      const named = new Set(
        cells.flatMap((c) => [...c.matchAll(/`([A-Za-z][A-Za-z0-9_]*)(?:\(\w*\))?`/g)].map((m) => m[1]!)),
      );
      const exportText = ['sdk/index.ts', 'sdk/testing/index.ts']
        .map((f) => readFileSync(repoPath(f), 'utf8'))
        .join('\n');
      const exported = new Set(
        [...exportText.matchAll(/\b(?:type\s+)?([A-Za-z][A-Za-z0-9_]*)\b(?=\s*[,}\n])/g)].map((m) => m[1]!),
      );
      expect([...named].filter((n) => !exported.has(n))).toEqual([]);
      const runtime = [
        ...Object.keys(await import('../../../sdk/index.js')),
        ...Object.keys(await import('../../../sdk/testing/index.js')),
      ];
      expect(runtime.filter((n) => !named.has(n))).toEqual([]);
    },
  );
});
