// How `explain` describes a mount-mode mount comes from the backend (bindsGrants), not its name:
// bound (read-only enforced) under bwrap; a link under the process backend, where read-only is NOT
// enforced and a read-write link is not claimed to be bound by anything.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { explainBinding } from '../../../host/bindings/explain.js';
import { BindingSchema } from '../../../host/bindings/schema.js';
import { parseLimits } from '../../../host/config/limits.js';
import { discoverRunners } from '../../../host/plugins/catalog.js';
import { REPO_ROOT } from '../../helpers/fixtures.js';

const root = mkdtempSync(join(tmpdir(), 'paddock-explain-mounts-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
for (const d of ['ro', 'rw']) mkdirSync(join(root, 'roots', d), { recursive: true });
const resources = {
  models: [],
  knowledgeBases: [],
  mcpServers: [],
  skills: [],
  artifacts: [],
  mounts: [
    { id: 'ro', tenant: 'default', path: join(root, 'roots', 'ro'), mode: 'ro' as const },
    { id: 'rw', tenant: 'default', path: join(root, 'roots', 'rw'), mode: 'rw' as const },
  ],
};

function mountLines(sandbox: 'process' | 'bwrap') {
  const binding = BindingSchema.parse({
    id: 'b',
    runner: 'claude-code',
    sandbox,
    workspace: 'mount',
    allowDegrade: true,
    grants: { mounts: ['ro', 'rw'] },
  });
  const e = explainBinding(binding, discoverRunners([join(REPO_ROOT, 'runners')]), resources, parseLimits(), {
    dataDir: join(root, 'data'),
    harnessDir: join(root, 'harness'),
    mountRoots: [join(root, 'roots')],
  });
  return { backend: e.sandbox.backend, lines: e.workspace.contents.filter((c) => c.startsWith('in/mounts/')) };
}

describe('explain: mount-mode mounts, per backend', () => {
  it('process: read-only is NOT enforced; read-write is a plain link, nothing claims to bind it', () => {
    expect(mountLines('process')).toEqual({
      backend: 'process',
      lines: [
        'in/mounts/ro/ (link to mount ro, read-only — read-only NOT enforced by the process backend)',
        'in/mounts/rw/ (link to mount rw, read-write)',
      ],
    });
  });

  it('bwrap: both bound by bwrap (this machine must run bwrap; degraded, the process lines would show)', () => {
    expect(mountLines('bwrap')).toEqual({
      backend: 'bwrap',
      lines: [
        'in/mounts/ro/ (link to mount ro, read-only — bound by bwrap)',
        'in/mounts/rw/ (link to mount rw, read-write — bound by bwrap)',
      ],
    });
  });
});
