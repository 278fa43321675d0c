import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import { ConfigFileSchema } from '../../../host/bindings/schema.js';
import { expectedFiles } from '../../../scripts/protocolDocs.js';
import { repoPath } from '../../helpers/fixtures.js';

const published = JSON.parse(readFileSync(repoPath('docs/paddock.schema.json'), 'utf8')) as Record<string, unknown>;
const validate = new Ajv2020({ strict: false, allErrors: true, validateFormats: false }).compile(published);

/** Every ```yaml block of a doc that is a paddock.yaml (top-level resources: or bindings:). */
function configBlocks(doc: string): { where: string; text: string }[] {
  const text = readFileSync(repoPath(doc), 'utf8');
  return [...text.matchAll(/```yaml\n([\s\S]*?)```/g)]
    .filter((m) => /^(resources|bindings):/m.test(m[1]!))
    .map((m) => ({ where: `${doc}:${text.slice(0, m.index).split('\n').length}`, text: m[1]! }));
}

describe('the published JSON Schema of paddock.yaml (docs/paddock.schema.json)', () => {
  it('is generated from the zod ConfigFileSchema (npm run protocol:gen)', () => {
    expect(readFileSync(repoPath('docs/paddock.schema.json'), 'utf8')).toBe(expectedFiles().configSchema);
  });

  const blocks = [...configBlocks('README.md'), ...configBlocks('docs/admin-guide.md')];
  it('finds the example configurations of README and the admin guide', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(3);
    expect(blocks.some((b) => b.where.startsWith('README.md'))).toBe(true);
  });

  it.each(blocks)('the example at $where validates against it and against the zod schema', ({ text }) => {
    const config = parseYaml(text) as unknown;
    expect(validate(config), JSON.stringify(validate.errors)).toBe(true);
    expect(ConfigFileSchema.safeParse(config).error?.issues ?? []).toEqual([]);
  });

  it(
    'refuses what apply refuses structurally: an unknown field, a ' + 'wrong enum, a missing id (so editors flag it)',
    () => {
      expect(validate({ bindings: [{ id: 'b', runner: 'echo', grants: { modles: [] } }] })).toBe(false);
      expect(validate({ bindings: [{ id: 'b', runner: 'echo', sandbox: 'docker' }] })).toBe(false);
      expect(validate({ resources: { models: [{ provider: 'scripted', model: 'x' }] } })).toBe(false);
      expect(validate({ bindings: [{ id: 'b', runner: 'echo' }] })).toBe(true);
    },
  );
});
