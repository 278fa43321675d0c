// The run's policy (host/policy/runPolicy.ts) over a stand-in port (a fake, named so: an in-memory approvals
// table; the flow with the real store and runners is test/integration/approvals.test.ts and taint.test.ts): the
// bounds on what one run may put before approvers, taint, and what a secret file teaches the host.
import { describe, expect, it } from 'vitest';
import { assignedValues } from '../../../host/policy/assignedValues.js';
import {
  MAX_ASKED_TARGET_CHARS,
  MAX_ASKS_PER_RUN,
  MAX_WAITING_PER_RUN,
  RunPolicy,
  type ApprovalAnswer,
  type ApprovalPort,
  type ApprovalState,
  type PendingApproval,
} from '../../../host/policy/runPolicy.js';
import type { Action, CapabilityGrant, GrantLifetime } from '../../../host/policy/actions.js';

function standIn() {
  const rows = new Map<string, ApprovalState & { pending: PendingApproval; polled: number }>();
  const grants: CapabilityGrant[] = [];
  const decided: ApprovalAnswer[] = [];
  const tainted: [string, string][] = [];
  const learnt: string[] = [];
  const port: ApprovalPort = {
    liveGrants: () => grants,
    useOnceGrant: () => false,
    request: (pending) => rows.set(pending.id, { status: 'pending', pending, polled: 0 }),
    state: (id) => {
      const row = rows.get(id);
      if (row) row.polled += 1;
      return row;
    },
    expire: (id) => rows.get(id),
    void: (id, _at, why) => {
      const row = rows.get(id);
      if (row?.status === 'pending') Object.assign(row, { status: 'void', reason: why });
      return row;
    },
    decided: (answer) => decided.push(answer),
    tainted: (dataClass, source) => tainted.push([dataClass, source]),
    containsSecret: (text) => learnt.some((v) => text.includes(v)),
    learnSecret: (value) => learnt.push(value),
    watchKnown: () => {
      let seen = '';
      return (chunk) => learnt.some((v) => (seen += chunk).includes(v));
    },
  };
  const decide = (status: 'approved' | 'denied') => {
    const row = [...rows.values()].find((r) => r.status === 'pending')!;
    row.status = status;
    row.decidedBy = 'user:test';
  };
  return { port, rows, grants, decided, tainted, learnt, decide };
}

const policyOver = (port: ApprovalPort) =>
  new RunPolicy(
    {
      tenant: 't',
      bindingId: 'b',
      sessionId: 's',
      runId: 'r',
      goalRevision: 0,
      runnerId: 'x',
      sandbox: 'strong',
      workspaceRoot: '/ws',
      rules: [],
      approvalPolicy: 'ask',
      timeoutMs: 60_000,
      networkAllow: [],
    },
    port,
    { pollMs: 1 },
  );
const exec = (value: string): Action => ({ effect: 'exec', target: { kind: 'command', value }, via: 'runner:x' });

describe('RunPolicy: what one run may put before approvers', () => {
  it('a target too long to read is denied without asking anybody', async () => {
    const s = standIn();
    const answer = await policyOver(s.port).decide(exec(`make ${'x'.repeat(MAX_ASKED_TARGET_CHARS)}`), 'once');
    expect(answer).toMatchObject({ decision: 'denied', by: 'host', reason: expect.stringMatching(/too long/) });
    expect(s.rows.size).toBe(0);
  });

  it(`at most ${MAX_WAITING_PER_RUN} wait at once; the next is denied at once; one decided frees a place`, async () => {
    const s = standIn();
    const policy = policyOver(s.port);
    const waiting = Array.from({ length: MAX_WAITING_PER_RUN }, (_, i) => policy.decide(exec(`make t${i}`), 'once'));
    const over = await policy.decide(exec('make one-more'), 'once');
    expect(over).toMatchObject({ decision: 'denied', reason: expect.stringMatching(/already waiting/) });
    expect(s.rows.size).toBe(MAX_WAITING_PER_RUN);
    s.decide('approved');
    const first = await Promise.race(waiting);
    expect(first).toMatchObject({ decision: 'approved', by: 'user:test' });
    const next = policy.decide(exec('make after'), 'once');
    expect(s.rows.size).toBe(MAX_WAITING_PER_RUN + 1);
    for (let i = 0; i < MAX_WAITING_PER_RUN; i++) s.decide('denied');
    await Promise.all([...waiting, next]);
  });
});

describe('RunPolicy: asks in all', () => {
  it(`at most ${MAX_ASKS_PER_RUN} asks of one run reach a person; the next is denied without asking`, async () => {
    const s = standIn();
    const policy = policyOver(s.port);
    for (let i = 0; i < MAX_ASKS_PER_RUN; i++) {
      const answer = policy.decide(exec(`make t${i}`), 'once');
      s.decide('denied');
      await answer;
    }
    const over = await policy.decide(exec('make one-more'), 'once');
    expect(over).toMatchObject({ decision: 'denied', reason: expect.stringMatching(/asked 256 times/) });
    expect(s.rows.size).toBe(MAX_ASKS_PER_RUN);
  });
});

describe('RunPolicy: twin asks', () => {
  const egress = (): Action => ({
    effect: 'network',
    target: { kind: 'domain', value: 'api.example.com' },
    via: 'egress',
  });
  const grant = (id: string, lifetime: GrantLifetime): CapabilityGrant => ({
    id,
    capability: 'network',
    scope: { kind: 'domain', value: 'api.example.com' },
    lifetime,
    tenant: 't',
    bindingId: 'b',
    sessionId: 's',
    runId: 'r',
    grantor: 'user:test',
    createdAt: new Date().toISOString(),
  });
  /** Resolves once every waiting row was read at least `n` more times (each wait's turn reads its row first). */
  const turns = async (s: ReturnType<typeof standIn>, n: number) => {
    const start = new Map([...s.rows].map(([id, r]) => [id, r.polled]));
    while ([...s.rows].some(([id, r]) => r.status === 'pending' && r.polled < start.get(id)! + n))
      await new Promise((resolve) => setTimeout(resolve, 1));
  };

  it('a lasting grant made while twins wait answers them (each voided, no longer asked), once grants not', async () => {
    const s = standIn();
    const policy = policyOver(s.port);
    const twins = [policy.decide(egress(), 'once'), policy.decide(egress(), 'once')];
    expect([...s.rows.values()].map((r) => r.status)).toEqual(['pending', 'pending']);
    s.grants.push(grant('gr_once', 'once'));
    await turns(s, 3);
    expect([...s.rows.values()].map((r) => r.status)).toEqual(['pending', 'pending']);
    s.grants.push(grant('gr_run', 'run'));
    const answers = await Promise.all(twins);
    for (const answer of answers)
      expect(answer).toMatchObject({ decision: 'approved', by: 'grant gr_run', grantId: 'gr_run' });
    for (const row of s.rows.values())
      expect(row).toMatchObject({ status: 'void', reason: expect.stringMatching(/^no longer asked: .*gr_run/) });
  });

  it('while tainted, a lasting grant answers no twin: each still needs its own one-time approval', async () => {
    const s = standIn();
    const policy = policyOver(s.port);
    policy.markTainted('credential', '.env');
    const twin = policy.decide(egress(), 'once');
    s.grants.push(grant('gr_run', 'run'));
    await turns(s, 3);
    expect([...s.rows.values()].map((r) => r.status)).toEqual(['pending']);
    s.decide('denied');
    expect(await twin).toMatchObject({ decision: 'denied', by: 'user:test' });
  });
});

describe('RunPolicy: taint and learnt secrets', () => {
  it('a data class taints once; an allowed read of a secret path teaches its values and taints', async () => {
    const s = standIn();
    const policy = policyOver(s.port);
    policy.markTainted('credential', '.env');
    policy.markTainted('credential', 'other/.env');
    expect(s.tainted).toEqual([['credential', '.env']]);
    policy.afterRead('.env', Buffer.from('A=short\nexport TOKEN="abcdefgh12345"\nURL = https://x.test/k\n'), true);
    expect(s.learnt).toEqual(['abcdefgh12345', 'https://x.test/k']);
    // Content holding what the host knows taints with `secret`.
    policy.afterRead('notes.txt', Buffer.from('paste: abcdefgh12345'), false);
    expect(s.tainted).toContainEqual(['secret', 'notes.txt']);
  });

  it('assignedValues reads dotenv, shell and ini lines, unquoted, 8 characters or more, and nothing else', () => {
    expect(assignedValues('KEY=\'value-one-1\'\n# c\nexport B="value-two-2"\nC: value-three\nnot a line\nD=x')).toEqual(
      ['value-one-1', 'value-two-2', 'value-three'],
    );
    expect(assignedValues('x'.repeat(100_000))).toEqual([]);
  });
});
