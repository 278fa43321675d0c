// `paddock dispatch --tenant` and `paddock explain` with tenants: real CLI processes on one data folder.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { jsonLines, paddock } from '../helpers/cli.js';
import { chatEvent, FIXTURE_RUNNERS } from '../helpers/host.js';

const env = { PADDOCK_RUNNER_DIRS: FIXTURE_RUNNERS };

describe('paddock dispatch --tenant', () => {
  it("routes among the named tenant's bindings only, dedupes per tenant, refuses a name that is not one", async () => {
    const home = mkdtempSync(join(tmpdir(), 'paddock-cli-tenants-'));
    const file = join(home, 'paddock.yaml');
    writeFileSync(
      file,
      `bindings:
  - { id: acme-echo, tenant: acme, runner: echo, sandbox: process, route: { bot: shared },
      config: { prefix: "acme: " } }
  - { id: beta-echo, tenant: beta, runner: echo, sandbox: process, route: { bot: shared },
      config: { prefix: "beta: " } }
`,
    );
    expect((await paddock(['apply', '-f', file], { dataDir: home, env })).exitCode).toBe(0);
    const explain = await paddock(['explain', 'beta-echo'], { dataDir: home, env });
    expect(explain.stdout).toContain('binding beta-echo (enabled) · tenant beta → runner echo');

    const event = JSON.stringify(chatEvent({ id: 'same', bot: 'shared', text: 'ping' }));
    const replyOf = (stdout: string) =>
      (
        jsonLines(stdout).find((l) => l.type === 'outcome')!.outcome as {
          result: { output: { parts: { text: string }[] } };
        }
      ).result.output.parts[0]!.text;
    for (const tenant of ['acme', 'beta']) {
      const r = await paddock(['dispatch', '-f', '-', '--json', '--tenant', tenant], {
        dataDir: home,
        env,
        input: event,
      });
      expect(r.exitCode, r.stderr).toBe(0);
      expect(replyOf(r.stdout)).toBe(`${tenant}: ping`);
    }
    const again = await paddock(['dispatch', '-f', '-', '--tenant', 'beta'], { dataDir: home, env, input: event });
    expect(again.stdout).toMatch(/duplicate: event already dispatched as run run_\S+ \(binding beta-echo\)/);
    // No --tenant: the default tenant, which has no binding here.
    const none = await paddock(['dispatch', '-f', '-'], { dataDir: home, env, input: event });
    expect(none.exitCode).toBe(6);
    expect(none.stdout).toContain('refused (no_binding): no binding routes telegram/shared/group:c1 (message)');
    for (const bad of ['Acme', '\u0430cme']) {
      const r = await paddock(['dispatch', '-f', '-', '--tenant', bad], { dataDir: home, env, input: event });
      expect(r.exitCode, JSON.stringify(bad)).toBe(2);
      expect(r.stderr).toContain('is not a tenant name');
    }
  }, 240_000);
});
