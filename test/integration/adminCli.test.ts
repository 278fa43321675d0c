import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { jsonLines, paddock } from '../helpers/cli.js';
import { chatEvent, FIXTURE_RUNNERS } from '../helpers/host.js';

const env = { PADDOCK_RUNNER_DIRS: FIXTURE_RUNNERS };
const tmp = (prefix: string) => mkdtempSync(join(tmpdir(), prefix));

function writeFile(dir: string, name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

describe('admin CLI (real processes, one data folder)', () => {
  it(
    'apply, export, bindings list/show, resources list, explain --json; bad files are refused naming the field ' +
      'and change nothing',
    async () => {
      const home = tmp('paddock-admin-');
      const file = writeFile(
        home,
        'paddock.yaml',
        `resources:
  models:
    - { id: sonnet, provider: anthropic, model: claude-sonnet, apiKey: { env: ANTHROPIC_API_KEY } }
bindings:
  - id: support
    runner: echo
    route: { platform: telegram, bot: support }
    config: { prefix: "echo: " }
  - id: probe
    runner: tries-every-host-request
    route: { platform: telegram, bot: probe }
    grants: { models: [sonnet], state: session }
`,
      );
      const applied = await paddock(['apply', '-f', file], { dataDir: home, env });
      expect(applied.exitCode, applied.stderr).toBe(0);
      expect(applied.stdout).toContain('created   binding support');
      expect(applied.stdout).toContain('3 change(s), 0 unchanged');
      expect((await paddock(['apply', '-f', file], { dataDir: home, env })).stdout).toContain(
        '0 change(s), 3 unchanged',
      );

      const inline = writeFile(
        home,
        'inline.yaml',
        'resources:\n  models:\n    - { id: leak, provider: openai, model: gpt, apiKey: ' +
          '"sk-proj-abcdefghijklmnopqrstuvwxyz" }\n',
      );
      const refused = await paddock(['apply', '-f', inline], { dataDir: home, env });
      expect(refused.exitCode).toBe(2);
      expect(refused.stderr).toBe(
        `paddock: ${inline}: resources.models[0].apiKey: apparent inline secret: "apiKey" holds a literal ` +
          `string; write { env: NAME } or { file: /path } instead`,
      );
      const badConfig = writeFile(
        home,
        'bad.yaml',
        'bindings:\n  - { id: support, runner: echo, route: { platform: telegram, bot: support }, config: { ' +
          'delayMs: fast } }\n',
      );
      expect((await paddock(['apply', '-f', badConfig], { dataDir: home, env })).stderr).toBe(
        `paddock: ${badConfig}: bindings[0].config.delayMs: must be integer`,
      );

      const exported = parseYaml((await paddock(['export'], { dataDir: home, env })).stdout) as {
        bindings: { id: string; config: unknown }[];
      };
      expect(exported.bindings.map((b) => b.id)).toEqual(['probe', 'support']);
      // the refused file changed nothing
      expect(exported.bindings.find((b) => b.id === 'support')!.config).toEqual({ prefix: 'echo: ' });

      const list = JSON.parse((await paddock(['bindings', 'list', '--json'], { dataDir: home, env })).stdout) as {
        id: string;
        version: number;
        spec: { enabled: boolean };
      }[];
      expect(list.map((b) => [b.id, b.version, b.spec.enabled])).toEqual([
        ['probe', 1, true],
        ['support', 1, true],
      ]);
      const resources = JSON.parse((await paddock(['resources', 'list', '--json'], { dataDir: home, env })).stdout) as {
        kind: string;
        id: string;
      }[];
      expect(resources.map((r) => `${r.kind}/${r.id}`)).toEqual(['model/sonnet']);
      const explain = JSON.parse((await paddock(['explain', 'probe', '--json'], { dataDir: home, env })).stdout) as {
        access: { hostRequests: string[]; models: { id: string }[] };
        sandbox: { report: { enforced: string[] } };
        network: string;
      };
      expect(explain.access.hostRequests).toEqual(['state/get', 'state/set', 'state/delete', 'model/complete']);
      expect(explain.access.models.map((m) => m.id)).toEqual(['sonnet']);
      expect(explain.network).toBe('none: own network namespace with only loopback'); // bindings default to bwrap
      expect(explain.sandbox.report.enforced.join(' ')).toMatch(
        /only the run workspace, its session folder and rw mounts are writable/,
      );
      const human = (await paddock(['explain', 'probe'], { dataDir: home, env })).stdout;
      expect(human).toContain('models: sonnet (anthropic claude-sonnet)');
      // The writable binds of the launch itself (per-run names as placeholders).
      expect(human).toContain(
        `can write: ${join(home, 'workspaces', '<runId>')}; ${join(home, 'sessions', '<sessionId>')}`,
      );
      // A reference that does not resolve is named (issue 11, item 19); a value never is.
      expect(human).toContain('MISSING SECRET: model sonnet apiKey: environment variable ANTHROPIC_API_KEY is not set');
      const withKey = (
        await paddock(['explain', 'probe'], {
          dataDir: home,
          env: { ...env, ANTHROPIC_API_KEY: 'sk-ant-api03-admincli-canary-000000000000' },
        })
      ).stdout;
      expect(withKey).not.toContain('admincli-canary');
      expect(withKey).not.toContain('MISSING');
      expect((await paddock(['explain', 'nope'], { dataDir: home, env })).stderr).toBe('paddock: no binding "nope"');

      const show = await paddock(['bindings', 'show', 'support'], { dataDir: home, env });
      expect(show.stdout).toMatch(/binding support v1/);
      expect(show.stdout).toMatch(/v1 created by user:/);
      expect((await paddock(['audit', 'verify'], { dataDir: home })).exitCode).toBe(0);
    },
  );

  it('runners list shows every runner and reports a broken manifest with its file and field', async () => {
    const home = tmp('paddock-runners-');
    const r = await paddock(['runners', 'list', '--json'], { dataDir: home, env });
    expect(r.exitCode).toBe(0);
    const { runners, problems } = JSON.parse(r.stdout) as {
      runners: { id: string }[];
      problems: { file: string; field: string }[];
    };
    expect(runners.map((x) => x.id)).toEqual(
      expect.arrayContaining(['echo', 'tries-every-host-request', 'increments-state-counter']),
    );
    expect(problems).toEqual([
      expect.objectContaining({ file: join(FIXTURE_RUNNERS, 'broken-manifest/runner.json'), field: 'entry' }),
    ]);
    expect(r.stderr).toContain('broken runner: ');
    expect((await paddock(['runners', 'show', 'echo'], { dataDir: home, env })).stdout).toContain('config schema: ');
  });

  it(
    'dispatch streams a run; a redelivery is a no-op; an unrouted event exits 6; disable --cancel-active stops ' +
      'a run held by another process',
    async () => {
      const home = tmp('paddock-dispatch-');
      const sock = join(home, 'rv.sock');
      const arrived: Socket[] = [];
      let onArrive: () => void = () => undefined;
      const server = createServer((s) => {
        arrived.push(s);
        s.on('error', () => undefined);
        onArrive();
      }).listen(sock);
      const file = writeFile(
        home,
        'paddock.yaml',
        `bindings:
  - { id: echoes, runner: echo, route: { platform: telegram, bot: echoes }, config: { ` +
          `prefix: "re: " } }
  - { id: held, runner: waits-for-go, sandbox: process, route: { platform: telegram, ` +
          `bot: held }, config: { socket: ${JSON.stringify(sock)} } }
`,
      );
      expect((await paddock(['apply', '-f', file], { dataDir: home, env })).exitCode).toBe(0);

      const event = chatEvent({ bot: 'echoes', text: 'ping' });
      const first = await paddock(['dispatch', '-f', '-', '--json'], {
        dataDir: home,
        env,
        input: JSON.stringify(event),
      });
      expect(first.exitCode, first.stderr).toBe(0);
      const lines = jsonLines(first.stdout);
      const outcome = lines.find((l) => l.type === 'outcome')!.outcome as {
        status: string;
        result: { output: { parts: { text: string }[] } };
      };
      expect(outcome.result.output.parts[0]!.text).toBe('re: ping');
      const again = await paddock(['dispatch', '-f', '-'], { dataDir: home, env, input: JSON.stringify(event) });
      expect(again.exitCode).toBe(0);
      expect(again.stdout).toMatch(/duplicate: event already dispatched as run run_/);

      const stray = await paddock(['dispatch', '-f', '-'], {
        dataDir: home,
        env,
        input: JSON.stringify(chatEvent({ bot: 'nobody' })),
      });
      expect(stray.exitCode).toBe(6);
      expect(stray.stdout).toContain('refused (no_binding)');
      const malformed = await paddock(['dispatch', '-f', '-'], {
        dataDir: home,
        env,
        input: JSON.stringify({ ...chatEvent(), sender: {} }),
      });
      expect(malformed.exitCode).toBe(2);
      expect(malformed.stdout).toContain('refused (invalid_event): event.sender.id: ');

      const connected = new Promise<void>((resolve) => (onArrive = resolve));
      const heldRun = paddock(['dispatch', '-f', '-', '--json'], {
        dataDir: home,
        env,
        input: JSON.stringify(chatEvent({ bot: 'held' })),
      });
      await connected; // the run is active in the dispatch process
      const disabled = await paddock(['bindings', 'disable', 'held', '--cancel-active', '--by', 'alice'], {
        dataDir: home,
        env,
      });
      expect(disabled.stdout).toBe('binding held disabled; asked 1 active run(s) to cancel');
      const held = await heldRun;
      expect(held.exitCode).toBe(130);
      const heldOutcome = jsonLines(held.stdout).find((l) => l.type === 'outcome')!.outcome as {
        status: string;
        reason: string;
      };
      expect(heldOutcome.status).toBe('cancelled');
      const next = await paddock(['dispatch', '-f', '-'], {
        dataDir: home,
        env,
        input: JSON.stringify(chatEvent({ bot: 'held' })),
      });
      expect(next.exitCode).toBe(6);
      expect(next.stdout).toContain('refused (binding_disabled)');
      const audit = (await paddock(['audit', 'export'], { dataDir: home })).stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { type: string; actor: string });
      expect(audit.some((r) => r.type === 'run.cancel_requested' && r.actor === 'user:alice')).toBe(true);
      expect(audit.filter((r) => r.type === 'dispatch.refused').map((r) => r.actor)).toEqual([
        'platform:telegram',
        'platform:telegram',
        'platform:telegram',
      ]);
      server.close();
    },
  );
});
