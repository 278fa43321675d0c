// `paddock explain` prints a binding's approval policy (docs/approvals.md §2): its rules in order, the host's defaults
// for sample actions and the floors. Each row is checked against the evaluator a run uses (rules.ts evaluate) on the
// same sample action classified as a run's request is, here in the test, so the table cannot drift from it.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Effect, PolicyRule } from '../../host/policy/actions.js';
import { classifyRequest } from '../../host/policy/classify.js';
import type { PolicyTable } from '../../host/policy/policyTable.js';
import { DEFAULT_CASES, evaluate, FLOORED_EFFECTS } from '../../host/policy/rules.js';
import { paddock } from '../helpers/cli.js';
import { FIXTURE_RUNNERS } from '../helpers/host.js';

const env = { PADDOCK_RUNNER_DIRS: FIXTURE_RUNNERS };
const home = mkdtempSync(join(tmpdir(), 'paddock-explain-approvals-'));
afterAll(() => rmSync(home, { recursive: true, force: true }));

const RULES: PolicyRule[] = [
  { effect: 'exec', match: { command: 'make deploy-docs' }, decision: 'deny', why: 'docs deploy is manual' },
  { effect: 'exec', match: { command: 'make build' }, decision: 'allow' },
  { effect: 'fs.read', match: { path: '/etc/**' }, decision: 'allow', why: 'system config is public' },
  { effect: '*', match: { path: 'secrets/**' }, decision: 'ask' },
  { effect: 'publish', match: { command: 'git push *' }, decision: 'allow' },
];

/** The evaluator's decision of a sample action: no grants, no taint. */
function decide(sample: { effect: Effect; target: string }, rules: PolicyRule[], approvalPolicy: 'ask' | 'deny') {
  const action = classifyRequest({ effect: sample.effect, target: sample.target }, 'explain', {
    workspaceRoot: '/workspace',
  });
  const verdict = evaluate(action, {
    rules,
    grants: [],
    approvalPolicy,
    networkAllow: ['api.example.com'],
    sandbox: 'weak',
    now: new Date(),
    tenant: 't',
    bindingId: 'b',
    sessionId: 's',
    runId: 'r',
  });
  return { decision: verdict.decision, kind: verdict.decidedBy.kind, action };
}
const byOf = (kind: string) => (kind === 'default' ? 'host default' : `host ${kind}`);

async function explain(id: string) {
  const json = await paddock(['explain', id, '--json'], { dataDir: home, env });
  expect(json.exitCode, json.stderr).toBe(0);
  const text = await paddock(['explain', id], { dataDir: home, env });
  expect(text.exitCode, text.stderr).toBe(0);
  return { table: (JSON.parse(json.stdout) as { approvals: PolicyTable }).approvals, text: text.stdout };
}

describe('paddock explain: the approval policy, as the evaluator decides it', () => {
  it('lists the rules in order and every default row as evaluate() decides the sample action', async () => {
    const yaml = (id: string, policy: string) =>
      `  - id: ${id}\n    runner: echo\n    route: { platform: telegram, bot: ${id} }\n    sandbox: process\n` +
      `    network: { egress: [api.example.com] }\n${policy}`;
    const file = join(home, 'paddock.yaml');
    writeFileSync(
      file,
      'bindings:\n' +
        yaml(
          'guarded',
          `    approvalPolicy: ask\n    approvalTimeoutMs: 60000\n    policy: ${JSON.stringify(RULES)}\n`,
        ) +
        yaml('plain', ''),
    );
    const applied = await paddock(['apply', '-f', file], { dataDir: home, env });
    expect(applied.exitCode, applied.stderr).toBe(0);

    const guarded = await explain('guarded');
    expect(guarded.table.approvalPolicy).toBe('ask');
    expect(guarded.table.approvalTimeoutMs).toBe(60_000);
    expect(guarded.table.rules.map((r) => [r.n, r.effect, r.match, r.decision, r.why])).toEqual(
      RULES.map((r, i) => [i + 1, r.effect, Object.entries(r.match)[0]!.join(': '), r.decision, r.why]),
    );
    // The floored allow rule says the floor holds it.
    expect(guarded.table.rules[4]!.note).toMatch(/held at ask by the floors/);
    expect(guarded.table.rules[1]!.note).toBeUndefined();

    // Every sample of the host's table, plus a destination in network.egress.
    expect(guarded.table.defaults.map((d) => d.case)).toEqual([
      ...DEFAULT_CASES.map((c) => c.case),
      'network to a destination in network.egress',
    ]);
    const samples = [...DEFAULT_CASES, { effect: 'network' as const, target: 'api.example.com' }];
    guarded.table.defaults.forEach((row, i) => {
      const none = decide(samples[i]!, [], 'ask');
      expect(row.effect).toBe(none.action.effect);
      expect(row.target).toEqual(none.action.target);
      expect(row.byDefault.decision, row.case).toBe(none.decision);
      expect(row.byDefault.by, row.case).toBe(byOf(none.kind));
      const here = decide(samples[i]!, RULES, 'ask');
      expect(row.here.decision, row.case).toBe(here.decision);
    });
    // The binding's rules change what the defaults would do: `make build` allowed by rule 2, a read under /etc by
    // rule 3; `git push` stays ask though rule 5 allows it (the floor).
    const row = (c: string) => guarded.table.defaults.find((d) => d.case === c)!;
    expect(row('other exec').here).toMatchObject({ decision: 'allow', by: 'binding rule 2' });
    expect(row('read outside the workspace').here).toMatchObject({ decision: 'allow', by: 'binding rule 3' });
    expect(row('publish').here).toMatchObject({ decision: 'ask', by: 'host floor' });

    for (const effect of FLOORED_EFFECTS) expect(guarded.table.floors[0]).toContain(effect);
    expect(guarded.text).toContain('approvals: approvalPolicy ask · an ask waits 60000 ms for a person');
    expect(guarded.text).toContain('    1. exec command: make deploy-docs → deny (docs deploy is manual)');
    expect(guarded.text).toMatch(
      /other exec \(exec command:make build\): ask \([^)]*\) → here allow by binding rule 2/,
    );
    expect(guarded.text).toContain('floors (no binding lowers them):');

    // The default approvalPolicy (deny): every ask of the table is a deny here, said row by row.
    const plain = await explain('plain');
    expect(plain.table.approvalPolicy).toBe('deny');
    expect(plain.table.rules).toEqual([]);
    plain.table.defaults.forEach((r, i) => {
      expect(r.here.decision, r.case).toBe(decide(samples[i]!, [], 'deny').decision);
      if (r.byDefault.decision === 'ask') expect(r.here.decision).toBe('deny');
    });
    expect(plain.text).toContain('    none');
    expect(plain.text).toContain('approvalPolicy deny: every ask is denied without asking anybody');
  });
});
