import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ChatEventSchema } from '../../../sdk/protocol/schemas/event.js';
import { repoPath } from '../../helpers/fixtures.js';

/** Every ```json block of a doc that looks like a chat event (has platform, bot and message). */
function eventBlocks(doc: string): { where: string; event: unknown }[] {
  const text = readFileSync(repoPath(doc), 'utf8');
  return [...text.matchAll(/```json\n([\s\S]*?)```/g)]
    .filter((m) => /"platform"/.test(m[1]!) && /"message"/.test(m[1]!))
    .map((m) => ({
      where: `${doc}:${text.slice(0, m.index).split('\n').length}`,
      event: JSON.parse(m[1]!) as unknown,
    }));
}

describe('the sample chat events of README and the admin guide', () => {
  const blocks = [...eventBlocks('README.md'), ...eventBlocks('docs/admin-guide.md')];
  it('exist in both', () => {
    expect(blocks.filter((b) => b.where.startsWith('README.md'))).toHaveLength(1);
    expect(blocks.filter((b) => b.where.startsWith('docs/admin-guide.md'))).toHaveLength(1);
  });
  it.each(blocks)('the event at $where is a valid ChatEvent', ({ event }) => {
    expect(ChatEventSchema.safeParse(event).error?.issues ?? []).toEqual([]);
  });
});
