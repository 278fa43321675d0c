// A skill's SKILL.md front matter (host/bindings/skillDigest.ts): read when short; a long one, which could be nested
// deep enough to abort Node in the YAML parser, counts as none and the skill keeps its fallback name.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readSkill } from '../../../host/bindings/skillDigest.js';

const skill = (frontMatter: string) => {
  const folder = mkdtempSync(join(tmpdir(), 'paddock-skill-'));
  writeFileSync(join(folder, 'SKILL.md'), `---\n${frontMatter}\n---\n# body\n`);
  return folder;
};

describe('readSkill front matter', () => {
  it('reads a real one', () => {
    expect(readSkill(skill('name: pdf-tools\ndescription: PDFs\nversion: "1.2"'), 'fallback')).toMatchObject({
      name: 'pdf-tools',
      description: 'PDFs',
      version: '1.2',
    });
  });

  it('takes a long or deeply nested one as none, without a crash', () => {
    for (const frontMatter of ['['.repeat(20_000), `name: x\n${'- '.repeat(100_000)}y`, '['.repeat(4000)]) {
      const read = readSkill(skill(frontMatter), 'fallback');
      expect(read.name).toBe('fallback');
      expect(read.digest).toMatch(/^[0-9a-f]{64}$|^sha256:/);
    }
  });
});
