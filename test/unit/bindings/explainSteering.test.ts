// `paddock explain` on steering append: where a message during a run goes, from the runner's manifest
// (`capabilities.append`), in the explanation and its rendered line.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { explainBinding, renderExplanation } from '../../../host/bindings/explain.js';
import { BindingSchema } from '../../../host/bindings/schema.js';
import { parseLimits } from '../../../host/config/limits.js';
import { discoverRunners } from '../../../host/plugins/catalog.js';
import { REPO_ROOT } from '../../helpers/fixtures.js';

const root = mkdtempSync(join(tmpdir(), 'paddock-explain-steering-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const none = { models: [], knowledgeBases: [], mcpServers: [], skills: [], artifacts: [], mounts: [] };

function explain(runner: string, steering: string) {
  const binding = BindingSchema.parse({ id: 'b', runner, sandbox: 'process', steering });
  const e = explainBinding(binding, discoverRunners([join(REPO_ROOT, 'runners')]), none, parseLimits(), {
    dataDir: join(root, 'data'),
    harnessDir: join(root, 'harness'),
    mountRoots: [],
  });
  return { binding: e.binding, route: renderExplanation(e).split('\n')[1]! };
}

describe('explain: steering', () => {
  it('append with a runner that takes messages mid-run (claude-code) says the message goes to the running run', () => {
    const { binding, route } = explain('claude-code', 'append');
    expect(binding.steering).toBe('append');
    expect(route).toContain(
      'steering append (a message during a run is delivered to the running claude-code run; if it cannot take it, ' +
        'it waits its turn)',
    );
  });

  it('append with a runner that does not (acp, codex): the message waits its turn, as with queue', () => {
    expect(explain('acp', 'append').route).toContain(
      'steering append (runner acp takes no messages during a run: they wait their turn, as with queue)',
    );
    expect(explain('codex', 'append').binding.steeringNote).toMatch(/^runner codex takes no messages/);
  });

  it('queue and interrupt need no note', () => {
    expect(explain('claude-code', 'queue').binding.steeringNote).toBeUndefined();
    expect(explain('claude-code', 'interrupt').route).toMatch(/steering interrupt · approvals/);
  });
});
