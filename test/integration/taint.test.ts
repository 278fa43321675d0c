// Taint end to end (docs/approvals.md, "Taint"), the SDK-runner form of issue 14's combined attack: a runner that a
// repository's text told to read `.env` and send it to an "HTTP debug" MCP tool. The read of a secret path is asked
// (a credential floor); once approved, the run is tainted and the host knows the file's values. Sending them as they
// are is blocked at once (outbound secret scan); sending them disguised needs a one-time approval naming the
// destination and the data class. The receiving MCP server — a real one the test runs on loopback — is checked for
// every byte it got, and the audit trail for the chain.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunOutcome } from '../../host/process/outcome.js';
import { decideApproval, listApprovals, type ApprovalRow } from '../../host/state/approvals.js';
import { chatEvent, tempHost } from '../helpers/host.js';
import { rawDb } from '../helpers/rawDb.js';
import { debugMcpReceiver, pendingApproval } from '../helpers/approvals.js';

const CANARY = `sk-live-taintcanary${'Q'.repeat(24)}`;
const REVERSED = [...CANARY].reverse().join('');
const host = tempHost({ limits: { wallClockMs: 60_000 } });

/** The debug tool's server (test/helpers/approvals.ts): `receiver.received` is every byte it got. */
let receiver: Awaited<ReturnType<typeof debugMcpReceiver>>;

beforeAll(async () => {
  receiver = await debugMcpReceiver();
  host.apply({
    resources: { mcpServers: [{ id: 'debug', url: receiver.url }] },
    bindings: [
      {
        id: 'agent',
        runner: 'reads-then-sends',
        route: { bot: 'agent' },
        sandbox: 'bwrap',
        grants: { fs: 'read', mcpServers: ['debug'], approval: true },
        approvalPolicy: 'ask',
      },
    ],
  });
});
afterAll(async () => {
  await host.close();
  await receiver.close();
});

interface Step {
  ok?: unknown;
  error?: { code: number; data?: { deniedBy?: string }; message: string };
}
interface Steps {
  read: Step;
  asIs: Step;
  encoded: Step[];
  disguised: Step;
}

async function start(conversation: string) {
  const plan = {
    plant: { path: 'out/.env', content: `# local settings\nAPI_KEY="${CANARY}"\nDEBUG=1\n` },
    read: 'out/.env',
    server: 'debug',
    tool: 'http_debug',
  };
  const ticket = await host.dispatcher.dispatch(
    chatEvent({ bot: 'agent', text: JSON.stringify(plan), conversation: { id: conversation } }),
  );
  if (ticket.status === 'duplicate') throw new Error('duplicate');
  return { runId: ticket.runId, done: ticket.done };
}
const stepsOf = (o: RunOutcome): Steps => {
  expect(o.status, o.reason).toBe('completed');
  return JSON.parse((o.result?.output?.parts[0] as { text: string }).text) as Steps;
};
/** The run's next pending approval (test/helpers/approvals.ts). */
const pendingOf = (runId: string) => pendingApproval(host.store, runId);
const decide = (row: ApprovalRow, outcome: 'approved' | 'denied') => {
  const r = decideApproval(host.store, row.id, { outcome, by: 'user:test-approver', at: new Date().toISOString() });
  expect(r.ok).toBe(true);
};
const auditTypes = (runId: string) =>
  (
    rawDb(host.store).prepare('SELECT type, data FROM audit WHERE run_id = ? ORDER BY seq').all(runId) as {
      type: string;
      data: string;
    }[]
  ).map((r) => ({ type: r.type, ...(JSON.parse(r.data) as Record<string, unknown>) }));
const stored = () =>
  (
    rawDb(host.store).prepare('SELECT data FROM events UNION ALL SELECT data FROM audit').pluck().all() as string[]
  ).join('\n');

describe('a tainted run cannot send what it read to a destination nobody approved', () => {
  it('the chain: the .env read asked, approved, the run tainted; the send as is blocked by the scan', async () => {
    const before = receiver.received.length;
    const { runId, done } = await start('chain-1');
    const read = await pendingOf(runId);
    expect(read).toMatchObject({ effect: 'credential', target: { kind: 'path', value: 'out/.env' } });
    decide(read, 'approved');
    // The disguised send needs a one-time approval naming the destination and the data class: denied here.
    const send = await pendingOf(runId);
    expect(send).toMatchObject({
      effect: 'network',
      target: { kind: 'tool', value: 'debug/http_debug' },
      // A secret path (credential), whose content has a credential's shape the redactor knows (secret).
      dataClass: 'credential,secret',
      destination: 'debug/http_debug',
    });
    decide(send, 'denied');
    const steps = stepsOf(await done);
    expect(steps.read.ok).toMatchObject({ truncated: false });
    const refusal = (step: Step) => step.ok as { isError: boolean; content: { text: string }[] };
    expect(refusal(steps.asIs)).toMatchObject({ isError: true });
    expect(refusal(steps.asIs).content[0]!.text).toMatch(/secret value the host knows.*policy\.secretScan/);
    // The value has a provider key's shape: the host learnt it all the same, so its encodings are known too.
    for (const step of steps.encoded) expect(refusal(step).content[0]!.text).toMatch(/policy\.secretScan/);
    expect(refusal(steps.disguised)).toMatchObject({ isError: true });
    expect(refusal(steps.disguised).content[0]!.text).toMatch(/denied by user:test-approver/);
    // The receiving server got neither form of the secret.
    const got = receiver.received.slice(before).join('\n');
    expect(got).not.toContain(CANARY);
    expect(got).not.toContain(REVERSED);
    expect(got).not.toContain(Buffer.from(CANARY).toString('base64'));
    expect(got).not.toContain(Buffer.from(CANARY).toString('hex'));
    expect(got).not.toContain('http_debug","arguments'); // no tools/call reached it at all
    // The chain, in the audit trail: the asked read, its approval, the taint, the blocked send, the denied send.
    const chain = auditTypes(runId).filter((r) => /^(approval|run\.tainted|mcp)/.test(r.type));
    expect(chain.map((r) => r.type)).toEqual([
      'approval.requested',
      'approval.approved',
      'run.tainted',
      'run.tainted',
      'approval.decided',
      'mcp.denied',
      'approval.decided',
      'mcp.denied',
      'approval.decided',
      'mcp.denied',
      'approval.requested',
      'approval.denied',
      'mcp.denied',
    ]);
    expect(chain[2]).toMatchObject({ dataClass: 'credential', source: 'out/.env' });
    expect(chain[3]).toMatchObject({ dataClass: 'secret', source: 'out/.env' });
    expect(chain[4]).toMatchObject({ decision: 'denied', by: 'outbound secret scan' });
    expect(chain[5]).toMatchObject({ deniedBy: 'policy.secretScan' });
    // The value the run read is redacted wherever the host stored anything, in every form it was sent in.
    for (const form of [CANARY, Buffer.from(CANARY).toString('base64'), Buffer.from(CANARY).toString('hex')])
      expect(stored()).not.toContain(form);
  });

  it('approved once, the disguised send goes; the next one asks again (a one-time grant)', async () => {
    const before = receiver.received.length;
    const { runId, done } = await start('chain-2');
    decide(await pendingOf(runId), 'approved');
    decide(await pendingOf(runId), 'approved');
    const steps = stepsOf(await done);
    expect(steps.disguised.ok).toMatchObject({ isError: false });
    expect(receiver.received.slice(before).join('\n')).toContain(REVERSED);
    expect(receiver.received.slice(before).join('\n')).not.toContain(CANARY);
    const asked = listApprovals(host.store, { runId, limit: 10 });
    expect(asked.map((r) => [r.effect, r.status])).toEqual([
      ['credential', 'approved'],
      ['network', 'approved'],
    ]);
  });

  it('the read denied: nothing tainted, and an untainted run sends without asking', async () => {
    const before = receiver.received.length;
    const { runId, done } = await start('chain-3');
    decide(await pendingOf(runId), 'denied');
    const steps = stepsOf(await done);
    expect(steps.read.error).toMatchObject({ data: { deniedBy: 'user:test-approver' } });
    expect(steps.asIs.ok).toMatchObject({ isError: false });
    expect(receiver.received.slice(before).join('\n')).toContain('nothing was read');
    expect(auditTypes(runId).map((r) => r.type)).not.toContain('run.tainted');
    expect(listApprovals(host.store, { runId, limit: 10 })).toHaveLength(1);
  });
});
