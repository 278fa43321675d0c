// One network report from the launch, everywhere (issue 11 item 15): `paddock explain`, the human
// run header, `--json` and the audit's `run.spawned` all show the string networkDescription()
// makes from the mechanism (backend, egress proxy started or not, its allowlist).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { networkDescription, startsEgressProxy, type Backend } from '../../host/sandbox/prepare.js';
import { jsonLines, paddock } from '../helpers/cli.js';
import { chatEvent } from '../helpers/host.js';

type Case = { id: string; sandbox: Backend; egress: string[]; allowPrivate: boolean; approvalPolicy: 'ask' | 'deny' };
const CASES: Case[] = [
  { id: 'closed', sandbox: 'bwrap', egress: [], allowPrivate: false, approvalPolicy: 'deny' },
  {
    id: 'egress',
    sandbox: 'bwrap',
    egress: ['api.example.com', '*.example.org:443'],
    allowPrivate: false,
    approvalPolicy: 'deny',
  },
  {
    id: 'egress-private',
    sandbox: 'bwrap',
    egress: ['api.example.com', '*.example.org:443'],
    allowPrivate: true,
    approvalPolicy: 'deny',
  },
  { id: 'process', sandbox: 'process', egress: ['api.example.com'], allowPrivate: false, approvalPolicy: 'deny' },
  // Nothing listed, but a person may approve a destination: the proxy runs and the report says so.
  { id: 'asks', sandbox: 'bwrap', egress: [], allowPrivate: false, approvalPolicy: 'ask' },
];

describe('the network report (real CLI processes)', () => {
  it('explain, the run headers (human, --json) and the audit say the same thing, differing by case', async () => {
    const home = mkdtempSync(join(tmpdir(), 'paddock-netreport-'));
    const file = join(home, 'paddock.yaml');
    writeFileSync(
      file,
      'bindings:\n' +
        CASES.map(
          (c) =>
            `  - { id: ${c.id}, runner: echo, sandbox: ${c.sandbox}, route: { platform: net, bot: ${c.id} }, ` +
            `network: { egress: ${JSON.stringify(c.egress)}, allowPrivate: ${c.allowPrivate} }, ` +
            `approvalPolicy: ${c.approvalPolicy} }`,
        ).join('\n') +
        '\n',
    );
    const applied = await paddock(['apply', '-f', file], { dataDir: home });
    expect(applied.exitCode, applied.stderr).toBe(0);

    const seen: string[] = [];
    for (const c of CASES) {
      const expected = networkDescription(c.sandbox, {
        proxy: startsEgressProxy(c.sandbox, { network: c, approvalPolicy: c.approvalPolicy, policy: [] }),
        allow: c.egress,
        allowPrivate: c.allowPrivate,
        beyondList: c.approvalPolicy === 'ask',
      });
      const explained = await paddock(['explain', c.id, '--json'], { dataDir: home });
      expect(explained.exitCode, explained.stderr).toBe(0);
      const e = JSON.parse(explained.stdout) as {
        network: string;
        worstCase: { network: string };
        sandbox: { report: { network: string } };
      };
      expect([e.network, e.worstCase.network, e.sandbox.report.network]).toEqual([expected, expected, expected]);
      const text = await paddock(['explain', c.id], { dataDir: home });
      expect(text.stdout).toContain(`\nnetwork: ${expected}\n`);

      const json = await paddock(['dispatch', '-f', '-', '--json'], {
        dataDir: home,
        input: JSON.stringify(chatEvent({ platform: 'net', bot: c.id })),
      });
      expect(json.exitCode, json.stderr).toBe(0);
      const started = jsonLines(json.stdout).find((l) => l.type === 'started') as unknown as {
        isolation: { network: string };
        runId: string;
      };
      expect(started.isolation.network).toBe(expected);

      const human = await paddock(['dispatch', '-f', '-'], {
        dataDir: home,
        input: JSON.stringify(chatEvent({ platform: 'net', bot: c.id })),
      });
      expect(human.exitCode, human.stderr).toBe(0);
      expect(human.stdout).toContain(`\n  network: ${expected}\n`);
      expect(human.stdout).not.toContain('no network,'); // the old fixed wording

      const audit = await paddock(['audit', 'export'], { dataDir: home });
      const spawned = jsonLines(audit.stdout).filter(
        (r) => r.type === 'run.spawned' && (r as { runId?: string; run_id?: string }).runId === started.runId,
      );
      expect(spawned).toHaveLength(1);
      expect((spawned[0]!.data as { isolation: { network: string } }).isolation.network).toBe(expected);
      seen.push(expected);
    }
    // Five different mechanisms, five different reports.
    expect(new Set(seen).size).toBe(CASES.length);
    expect(seen[0]).toMatch(/^none/);
    expect(seen[1]).toMatch(
      /egress proxy, to api\.example\.com, \*\.example\.org:443; .*private and loopback addresses refused/,
    );
    expect(seen[2]).toMatch(/private and loopback addresses allowed/);
    expect(seen[3]).toMatch(/any destination the host can reach.*allowlist \(api\.example\.com\) is NOT enforced/);
    expect(seen[4]).toMatch(/egress proxy, to no listed destination and any other the run's policy allows/);
    expect(seen[1]).toMatch(/while the run is tainted every destination needs a one-time approval/);
  }, 400_000);
});
