import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { paddock } from '../helpers/cli.js';
import { FIXTURE_RUNNERS } from '../helpers/host.js';

// Issue 11, item 19a: a secret reference that does not resolve is reported by apply (a warning
// naming every resource and field), explain and doctor — not only when a run fails.

const VAR = `PADDOCK_TEST_MISSING_${process.pid}`;
const FILE = `/nonexistent-${process.pid}/token`;

describe('missing secret references (real CLI processes)', () => {
  it(
    'apply warns for each, explain lists those of the binding, ' + 'doctor lists all; once set, nothing is reported',
    async () => {
      const home = mkdtempSync(join(tmpdir(), 'paddock-missing-'));
      const file = join(home, 'paddock.yaml');
      writeFileSync(
        file,
        `resources:
  models:
    - { id: claude, provider: anthropic, model: claude-x, apiKey: { env: ${VAR} } }
    - { id: unused, provider: openai, model: gpt-x, apiKey: { file: ${FILE} } }
  mcpServers:
    - { id: tools, url: "http://127.0.0.1:9/mcp", headers: { Authorization: { env: ${VAR}_MCP } } }
bindings:
  - id: probe
    runner: tries-every-host-request
    route: { platform: telegram, bot: probe }
    grants: { models: [claude], mcpServers: [tools] }
`,
      );
      const env = { PADDOCK_RUNNER_DIRS: FIXTURE_RUNNERS };
      const applied = await paddock(['apply', '-f', file], { dataDir: home, env });
      expect(applied.exitCode, applied.stderr).toBe(0); // applied: the running host may have another environment
      expect(applied.stderr).toContain(`warning: model claude apiKey: environment variable ${VAR} is not set`);
      expect(applied.stderr).toContain(`warning: model unused apiKey: file ${FILE} is not readable`);
      expect(applied.stderr).toContain(
        `warning: mcpServer tools headers.Authorization: environment variable ${VAR}_MCP is not set`,
      );
      const json = await paddock(['apply', '-f', file, '--json'], { dataDir: home, env });
      expect((JSON.parse(json.stdout) as { missingSecrets: string[] }).missingSecrets).toHaveLength(3);

      const explained = await paddock(['explain', 'probe'], { dataDir: home, env });
      expect(explained.exitCode, explained.stderr).toBe(0);
      expect(explained.stdout).toContain(`MISSING SECRET: model claude apiKey: environment variable ${VAR} is not set`);
      expect(explained.stdout).toContain(`MISSING SECRET: mcpServer tools headers.Authorization`);
      expect(explained.stdout).not.toContain('model unused'); // not granted to this binding

      const doctor = await paddock(['doctor'], { dataDir: home, env });
      expect(doctor.stdout).toContain('secret references: 3 MISSING');
      expect(doctor.stdout).toContain(`MISSING: model unused apiKey: file ${FILE} is not readable`);

      // With the references resolvable, all three are quiet.
      writeFileSync(join(home, 'token'), 'x');
      writeFileSync(
        file,
        `resources:\n  models:\n    - { id: unused, provider: openai, model: gpt-x, apiKey: { file: ` +
          `${join(home, 'token')} } }\n`,
      );
      const set = { ...env, [VAR]: 'value-1', [`${VAR}_MCP`]: 'value-2' };
      const quiet = await paddock(['apply', '-f', file], { dataDir: home, env: set });
      expect(quiet.stderr).not.toContain('warning');
      expect((await paddock(['explain', 'probe'], { dataDir: home, env: set })).stdout).not.toContain('MISSING');
      expect((await paddock(['doctor'], { dataDir: home, env: set })).stdout).toContain(
        'secret references: all resolve',
      );
    },
    120_000,
  );
});
