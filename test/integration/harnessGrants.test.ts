// Mounts and knowledge bases reach the REAL Claude Code CLI (issue 11 item 16): a granted mount is
// a working folder its tools read, a granted knowledge base is a host-served MCP search tool
// (audited kb.retrieve), and a grant that will not reach a runner is said by apply and explain.
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { harnessReports } from '../../host/harness/harnesses.js';
import type { RunOutcome } from '../../host/process/outcome.js';
import type { Update } from '../../sdk/protocol/types.js';
import { jsonLines, paddock } from '../helpers/cli.js';
import { chatEvent, tempHost } from '../helpers/host.js';
import { rawDb } from '../helpers/rawDb.js';

const root = mkdtempSync(join(tmpdir(), 'paddock-grants-'));
const repo = join(root, 'repo');
const kbDir = join(root, 'kb');
mkdirSync(repo);
mkdirSync(kbDir);
writeFileSync(join(repo, 'notes.txt'), 'mount-content-7f3a\n');
// readable by the run uid, as an admin's granted folder must be (docs/admin-guide.md "Run identity")
chmodSync(root, 0o755);
writeFileSync(
  join(kbDir, 'refunds.md'),
  '# Refund policy\n\nRefunds are paid within 14 days to the original card (marker kb-refund-91c2).\n',
);
writeFileSync(join(kbDir, 'shipping.md'), '# Shipping\n\nParcels leave the warehouse every Tuesday.\n');

const host = tempHost({ limits: { wallClockMs: 120_000 }, mountRoots: [root] });
afterAll(() => host.close());

async function dispatch(bot: string, text: string): Promise<{ outcome: RunOutcome; updates: Update[] }> {
  const updates: Update[] = [];
  const ticket = await host.dispatcher.dispatch(chatEvent({ bot, text, conversation: { id: `c-${bot}` } }), {
    onUpdate: (u) => updates.push(u),
  });
  if (ticket.status === 'duplicate') throw new Error('duplicate');
  return { outcome: await ticket.done, updates };
}
const outputOf = (o: RunOutcome) => (o.result?.output?.parts[0] as { text?: string } | undefined)?.text ?? '';
const auditOf = (type: string, runId: string) =>
  (
    rawDb(host.store)
      .prepare('SELECT data FROM audit WHERE type = ? AND run_id = ? ORDER BY seq')
      .pluck()
      .all(type, runId) as string[]
  ).map((d) => JSON.parse(d) as Record<string, unknown>);

beforeAll(() => {
  const claude = harnessReports().find((h) => h.name === 'claude')!;
  expect(
    claude.version,
    `the Claude Code CLI is needed: ${claude.problem} (bash scripts/install-harnesses.sh)`,
  ).toMatch(/^2\.1\.332/);
  host.apply({
    resources: {
      models: [{ id: 'sm', provider: 'scripted', model: 'scripted-1' }],
      mounts: [{ id: 'repo', path: repo, mode: 'ro' }],
      knowledgeBases: [
        { id: 'policies', name: 'Policies', path: kbDir },
        { id: 'other', path: kbDir },
      ],
    },
    bindings: [
      {
        id: 'cc-mount',
        runner: 'claude-code',
        route: { bot: 'mount' },
        sandbox: 'bwrap',
        workspace: 'mount',
        grants: { models: ['sm'], mounts: ['repo'] },
        config: { allowedTools: ['Bash(cat:*)'] },
      },
      {
        id: 'cc-mount-process',
        runner: 'claude-code',
        route: { bot: 'mount-process' },
        sandbox: 'process',
        workspace: 'mount',
        grants: { models: ['sm'], mounts: ['repo'] },
        config: { allowedTools: ['Bash(cat:*)'] },
      },
      {
        id: 'cc-kb',
        runner: 'claude-code',
        route: { bot: 'kb' },
        sandbox: 'bwrap',
        grants: { models: ['sm'], knowledgeBases: ['policies'] },
      },
    ],
  });
});

describe('claude-code gets its mounts and knowledge bases (real CLI, scripted model)', () => {
  for (const bot of ['mount', 'mount-process']) {
    it(
      `a granted mount is a working folder its Bash reads (` +
        `${bot === 'mount' ? 'bwrap bind' : 'process backend link'})`,
      async () => {
        const { outcome, updates } = await dispatch(bot, 'USE_TOOL:Bash:cat in/mounts/repo/notes.txt');
        expect(outcome.status, outcome.reason).toBe('completed');
        expect(updates).toContainEqual(
          expect.objectContaining({ kind: 'tool.finished', status: 'ok', output: 'mount-content-7f3a' }),
        );
        expect(outputOf(outcome)).toBe('TOOL_RESULT_SEEN: mount-content-7f3a');
      },
      180_000,
    );
  }

  it(
    'a granted knowledge base is a search tool served by the host: the right document comes back, audited ' +
      'kb.retrieve',
    async () => {
      const { outcome, updates } = await dispatch(
        'kb',
        'USE_TOOL:mcp___kb__search_policies:{"query":"refund card days","topK":1}',
      );
      expect(outcome.status, outcome.reason).toBe('completed');
      expect(updates).toContainEqual(
        expect.objectContaining({ kind: 'tool.started', name: 'mcp___kb__search_policies' }),
      );
      const finished = updates.find((u) => u.kind === 'tool.finished') as
        { status: string; output?: unknown } | undefined;
      expect(finished?.status).toBe('ok');
      expect(JSON.stringify(finished?.output)).toContain('kb-refund-91c2');
      expect(JSON.stringify(finished?.output)).not.toContain('Tuesday');
      expect(auditOf('kb.retrieve', outcome.runId)).toEqual([
        expect.objectContaining({ knowledgeBase: 'policies', kind: 'folder', chunks: 1, sources: ['refunds.md#0'] }),
      ]);
    },
    180_000,
  );

  it('an ungranted knowledge base is not offered: calling its tool fails and nothing is retrieved', async () => {
    const { outcome, updates } = await dispatch('kb', 'USE_TOOL:mcp___kb__search_other:{"query":"refund"}');
    expect(outcome.status, outcome.reason).toBe('completed');
    const finished = updates.find((u) => u.kind === 'tool.finished') as { status: string } | undefined;
    expect(finished?.status).not.toBe('ok');
    expect(auditOf('kb.retrieve', outcome.runId)).toEqual([]);
  }, 180_000);
});

describe('a grant that will not reach its runner is said, not silently dropped (real CLI processes)', () => {
  it('apply warns (and still applies), explain lists it as withheld', async () => {
    const home = mkdtempSync(join(tmpdir(), 'paddock-withheld-'));
    const file = join(home, 'paddock.yaml');
    writeFileSync(
      file,
      `resources:
  knowledgeBases: [{ id: handbook, path: ${JSON.stringify(kbDir)} }]
  mounts: [{ id: repo, ` +
        `path: ${JSON.stringify(repo)}, mode: rw }]
bindings:
  - { id: echoes, runner: echo, route: { bot: ` +
        `echoes }, grants: { knowledgeBases: [handbook], state: session } }
  - { id: coder, runner: ` +
        `claude-code, route: { bot: coder }, workspace: copy, grants: { mounts: [repo] } }
  - { id: fine, ` +
        `runner: claude-code, route: { bot: fine }, workspace: mount, grants: { mounts: [repo], knowledgeBases: ` +
        `[handbook] } }
`,
    );
    const env = { PADDOCK_MOUNT_ROOTS: root };
    const applied = await paddock(['apply', '-f', file], { dataDir: home, env });
    expect(applied.exitCode, applied.stderr).toBe(0);
    expect(applied.stdout).toContain('created   binding echoes');
    expect(applied.stdout).toMatch(
      new RegExp(
        String.raw`warning: binding echoes: knowledgeBases: handbook will not reach its runner — th` +
          String.raw`e runner's manifest does not use knowledgeBases`,
      ),
    );
    expect(applied.stdout).toMatch(
      new RegExp(
        String.raw`warning: binding echoes: state\/get, state\/set, state\/delete will not reach it` +
          String.raw`s runner — granted, but the runner's manifest does not ask for it`,
      ),
    );
    expect(applied.stdout).toMatch(
      /warning: binding coder: writes to mount repo will not reach its runner — workspace is copy/,
    );
    expect(applied.stdout).not.toMatch(/warning: binding fine/);
    const json = await paddock(['apply', '-f', file, '--json', '--dry-run'], { dataDir: home, env });
    expect(
      (jsonLines(json.stdout)[0] as unknown as { warnings: { binding: string }[] }).warnings.map((w) => w.binding),
    ).toEqual(['echoes', 'echoes', 'coder']);

    const explained = await paddock(['explain', 'echoes', '--json'], { dataDir: home, env });
    const e = JSON.parse(explained.stdout) as {
      withheld: { what: string; why: string }[];
      access: { knowledgeBases: unknown[] };
    };
    expect(e.withheld).toContainEqual({
      what: 'knowledgeBases: handbook',
      why: "the runner's manifest does not use knowledgeBases",
    });
    expect(e.access.knowledgeBases).toEqual([]);
    const text = await paddock(['explain', 'coder'], { dataDir: home, env });
    expect(text.stdout).toMatch(/withheld.*\n.*writes to mount repo — workspace is copy/);
    const fine = JSON.parse((await paddock(['explain', 'fine', '--json'], { dataDir: home, env })).stdout) as {
      withheld: unknown[];
      access: { knowledgeBases: { id: string }[]; mounts: { id: string }[] };
    };
    expect(fine.withheld).toEqual([]);
    expect(fine.access.knowledgeBases.map((k) => k.id)).toEqual(['handbook']);
    expect(fine.access.mounts.map((m) => m.id)).toEqual(['repo']);
  }, 180_000);
});
