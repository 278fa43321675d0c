// `paddock approvals list|approve|deny` and `paddock grants list|revoke` through the real bin, on a data folder whose
// approvals a store wrote: decisions made once and audited with the operator, refusals that say why (the status and
// who decided), grants never wider than asked, runner text escaped on the terminal.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvalById, insertApproval, type NewApproval } from '../../host/state/approvals.js';
import { capabilityGrantById, insertCapabilityGrant } from '../../host/state/capabilityGrants.js';
import { Store } from '../../host/state/store.js';
import { withStore as withDataStore } from '../helpers/approvals.js';
import { paddock } from '../helpers/cli.js';
import { rawDb } from '../helpers/rawDb.js';

const dataDir = mkdtempSync(join(tmpdir(), 'paddock-approvals-'));
const ENV = { USER: 'ada' };
const hour = (h: number) => new Date(Date.now() + h * 3_600_000).toISOString();

let n = 0;
function ask(over: Partial<NewApproval> = {}): NewApproval {
  n += 1;
  return {
    tenant: 'acme',
    runId: 'run_1',
    sessionId: 'ses_1',
    bindingId: 'helper',
    via: 'runner',
    effect: 'exec',
    target: { kind: 'command', value: 'npm test' },
    summary: `run the tests (${n})`,
    dataClass: null,
    destination: null,
    risk: { score: 30, level: 'medium', reasons: ['runs a command'] },
    goalRevision: 1,
    groupId: null,
    requestedLifetime: 'session',
    createdAt: new Date(Date.now() - 60_000 + n).toISOString(),
    expiresAt: hour(1),
    ...over,
  };
}

/** The data folder's store for `fn` (closed before the CLI runs again). */
const withStore = <T>(fn: (store: Store) => T): T => withDataStore(dataDir, fn);

const ids = { plain: '', hostile: '', narrow: '', expired: '', denyMe: '', other: '' };
beforeAll(() =>
  withStore((store) => {
    ids.plain = insertApproval(store, ask()).id;
    ids.hostile = insertApproval(store, ask({ summary: 'ok\x1b[2J\x1b]0;pwned\x07 \u202eevil', runId: 'run_2' })).id;
    ids.narrow = insertApproval(store, ask({ requestedLifetime: 'run' })).id;
    ids.expired = insertApproval(
      store,
      ask({ createdAt: new Date(Date.now() - 7_200_000).toISOString(), expiresAt: hour(-1) }),
    ).id;
    ids.denyMe = insertApproval(store, ask()).id;
    ids.other = insertApproval(store, ask({ tenant: 'beta', bindingId: 'beta-bot', runId: 'run_b' })).id;
  }),
);
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe('paddock approvals', () => {
  it("list shows every tenant's approvals oldest first; --status and --run filter; --json is the rows", async () => {
    const all = await paddock(['approvals', 'list', '--json'], { dataDir });
    expect(all.exitCode, all.stderr).toBe(0);
    const rows = JSON.parse(all.stdout) as { id: string; tenant: string; target: unknown }[];
    // The expired one was created two hours back: first in creation order.
    expect(rows.map((r) => r.id)).toEqual([ids.expired, ids.plain, ids.hostile, ids.narrow, ids.denyMe, ids.other]);
    expect(rows[0]).toMatchObject({ tenant: 'acme', target: { kind: 'command', value: 'npm test' } });
    const run2 = await paddock(['approvals', 'list', '--run', 'run_2', '--json'], { dataDir });
    expect((JSON.parse(run2.stdout) as { id: string }[]).map((r) => r.id)).toEqual([ids.hostile]);
    const denied = await paddock(['approvals', 'list', '--status', 'denied'], { dataDir });
    expect(denied.stdout.trim()).toBe('no denied approvals');
  }, 60_000);

  it("human output escapes the runner's control characters and marks a pending approval past its expiry", async () => {
    const r = await paddock(['approvals', 'list'], { dataDir });
    expect(r.exitCode, r.stderr).toBe(0);
    for (const raw of ['\x1b', '\x07', '\u202e']) expect(r.stdout).not.toContain(raw);
    const hostile = r.stdout.split('\n').find((l) => l.startsWith(ids.hostile))!;
    expect(hostile).toContain('\\u001b[2J'); // JSON.stringify's escape of ESC, shown, not acted on
    expect(hostile).toContain('\\u202e');
    expect(r.stdout.split('\n').find((l) => l.startsWith(ids.expired))).toContain('pending (past its expiry)');
    expect(r.stdout.split('\n').find((l) => l.startsWith(ids.plain))).toContain('exec command:npm test');
  }, 60_000);

  it('approve --lifetime session leaves a grant of exactly the target; deciding again says who decided', async () => {
    const r = await paddock(['approvals', 'approve', ids.plain, '--lifetime', 'session', '--reason', 'tests only'], {
      dataDir,
      env: ENV,
    });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      new RegExp(`approval ${ids.plain} approved by user:ada: exec command:npm test; grant grt_`),
    );
    const { approval, grant, actors } = withStore((store) => {
      const approval = approvalById(store, ids.plain)!;
      return {
        approval,
        grant: capabilityGrantById(store, approval.grantId!)!,
        actors: rawDb(store).prepare("SELECT actor FROM audit WHERE type = 'approval.approved'").pluck().all(),
      };
    });
    expect(approval).toMatchObject({ status: 'approved', decidedBy: 'user:ada', reason: 'tests only' });
    expect(grant).toMatchObject({
      capability: 'exec',
      scope: { kind: 'command', value: 'npm test' },
      lifetime: 'session',
    });
    expect(actors).toEqual(['user:ada']);

    const again = await paddock(['approvals', 'deny', ids.plain, '--by', 'bob'], { dataDir });
    expect(again.exitCode).toBe(1);
    expect(again.stderr).toContain(`approval ${ids.plain} is not pending: it is approved (by user:ada at `);
    expect(again.stderr).toContain('nothing decided');
    const asJson = await paddock(['approvals', 'approve', ids.plain, '--json'], { dataDir });
    expect(asJson.exitCode).toBe(1);
    expect(JSON.parse(asJson.stdout)).toMatchObject({ ok: false, code: 'not_pending', row: { status: 'approved' } });
  }, 60_000);

  it('a lifetime wider than asked, an expired approval and an unknown id are refused; nothing is decided', async () => {
    const wide = await paddock(['approvals', 'approve', ids.narrow, '--lifetime', 'binding'], { dataDir });
    expect(wide.exitCode).toBe(1);
    expect(wide.stderr).toContain(`--lifetime binding is wider than approval ${ids.narrow} asked for (at most run)`);
    const late = await paddock(['approvals', 'approve', ids.expired], { dataDir });
    expect(late.exitCode).toBe(1);
    expect(late.stderr).toMatch(/expired at .*, before this decision; nothing decided/);
    const unknown = await paddock(['approvals', 'deny', 'apr_nope'], { dataDir });
    expect(unknown.exitCode).toBe(2);
    expect(unknown.stderr).toContain('no approval apr_nope');
    const bad = await paddock(['approvals', 'approve', ids.narrow, '--lifetime', 'forever'], { dataDir });
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toContain('--lifetime must be one of once, run, session, binding (got "forever")');
    const badStatus = await paddock(['approvals', 'list', '--status', 'open'], { dataDir });
    expect(badStatus.exitCode).toBe(2);
    expect(badStatus.stderr).toContain('--status must be one of pending, approved, denied, expired, void');
    withStore((store) => {
      expect(approvalById(store, ids.narrow)!.status).toBe('pending');
      expect(approvalById(store, ids.expired)!.status).toBe('expired');
    });
  }, 60_000);

  it('deny records the reason and the operator; approve without --lifetime leaves no grant', async () => {
    const denied = await paddock(['approvals', 'deny', ids.denyMe, '--reason', 'not now', '--by', 'bob'], { dataDir });
    expect(denied.exitCode, denied.stderr).toBe(0);
    expect(denied.stdout).toContain(`approval ${ids.denyMe} denied by user:bob`);
    const once = await paddock(['approvals', 'approve', ids.narrow, '--json'], { dataDir, env: ENV });
    expect(once.exitCode, once.stderr).toBe(0);
    expect(JSON.parse(once.stdout)).toMatchObject({ ok: true, row: { status: 'approved', grantId: null } });
    withStore((store) =>
      expect(approvalById(store, ids.denyMe)).toMatchObject({
        status: 'denied',
        decidedBy: 'user:bob',
        reason: 'not now',
      }),
    );
  }, 60_000);
});

describe('paddock grants', () => {
  it('list shows live grants (every one with --all, or of one binding); revoke ends one, twice says when', async () => {
    const { live, dead } = withStore((store) => {
      const base = {
        capability: 'network',
        scope: { kind: 'domain', value: 'x.example' },
        grantor: 'user:ada',
      } as const;
      const live = insertCapabilityGrant(store, {
        ...base,
        lifetime: 'binding',
        tenant: 'beta',
        bindingId: 'beta-bot',
      });
      const dead = insertCapabilityGrant(store, { ...base, lifetime: 'binding', tenant: 'acme', bindingId: 'helper' });
      return { live: live.id, dead: dead.id };
    });
    const revoked = await paddock(['grants', 'revoke', dead], { dataDir, env: ENV });
    expect(revoked.exitCode, revoked.stderr).toBe(0);
    expect(revoked.stdout).toContain(`grant ${dead} revoked by user:ada`);
    const again = await paddock(['grants', 'revoke', dead, '--by', 'bob'], { dataDir });
    expect(again.exitCode).toBe(1);
    expect(again.stderr).toMatch(new RegExp(`grant ${dead} was already revoked \\(.* by user:ada\\)`));

    const listed = await paddock(['grants', 'list', '--json'], { dataDir });
    const liveIds = (JSON.parse(listed.stdout) as { id: string }[]).map((g) => g.id);
    expect(liveIds).toContain(live);
    expect(liveIds).not.toContain(dead);
    const all = await paddock(['grants', 'list', '--all', '--json'], { dataDir });
    expect((JSON.parse(all.stdout) as { id: string }[]).map((g) => g.id)).toEqual(expect.arrayContaining([live, dead]));
    const helper = await paddock(['grants', 'list', '--all', '--binding', 'beta-bot'], { dataDir });
    expect(
      helper.stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split(' ')[0]),
    ).toEqual([live]);
    expect(helper.stdout).toContain('network domain:x.example  binding · beta/beta-bot · by user:ada · live');
    const unknown = await paddock(['grants', 'revoke', 'grt_nope'], { dataDir });
    expect(unknown.exitCode).toBe(2);
    expect(unknown.stderr).toContain('no grant grt_nope');
  }, 60_000);

  it('every command has --help naming its options', async () => {
    const expected: [string[], string[]][] = [
      [
        ['approvals', 'list'],
        ['--status', '--run', '--json'],
      ],
      [
        ['approvals', 'approve'],
        ['<approvalId>', '--lifetime', '--reason', '--by'],
      ],
      [
        ['approvals', 'deny'],
        ['<approvalId>', '--reason'],
      ],
      [
        ['grants', 'list'],
        ['--binding', '--all', '--json'],
      ],
      [
        ['grants', 'revoke'],
        ['<grantId>', '--by'],
      ],
    ];
    for (const [words, options] of expected) {
      const r = await paddock([...words, '--help'], { dataDir });
      expect(r.exitCode, r.stderr).toBe(0);
      for (const o of options) expect(r.stdout, words.join(' ')).toContain(o);
    }
  }, 60_000);
});
