import { describe, expect, it } from 'vitest';
import { defineRunner, ErrorCodes, RpcError } from '../../../sdk/index.js';
import { createFakeHost } from '../../../sdk/testing/index.js';

// The fake host as docs/runner-authoring.md ("How the fake host serves requests") describes it.
const reader = defineRunner({
  manifest: { name: 'reader', version: '1.0.0' },
  async run(_event, _binding, ctx) {
    const seen = await ctx.state.get('seen');
    await ctx.state.set('seen', (seen.found ? (seen.value as number) : 0) + 1);
    const file = await ctx.fs.read('in/notes.md');
    await ctx.fs.write('out/copy.md', file.content.toUpperCase());
    return `${file.content} (${file.size} bytes, seen ${seen.found ? String(seen.value) : 'never'})`;
  },
});

function docHandlers(files: Map<string, string>) {
  return {
    'fs/read': ({ path }: Record<string, unknown>) => {
      const content = files.get(String(path));
      if (content === undefined) throw new RpcError(ErrorCodes.NotFound, `no file ${String(path)}`);
      return { content, encoding: 'utf8', size: Buffer.byteLength(content), truncated: false };
    },
    'fs/write': ({ path, content }: Record<string, unknown>) => (
      files.set(String(path), String(content)),
      { bytesWritten: Buffer.byteLength(String(content)) }
    ),
  };
}

describe('createFakeHost serves grants, state and fs as documented', () => {
  it('serves state from host.state and fs from the handlers; results have the documented shapes', async () => {
    const files = new Map([['in/notes.md', 'remember the milk']]);
    const host = await createFakeHost(reader, { handlers: docHandlers(files) });
    expect((await host.run()).result.output?.parts).toEqual([
      { type: 'text', text: 'remember the milk (17 bytes, seen never)' },
    ]);
    expect((await host.run()).result.output?.parts).toEqual([
      { type: 'text', text: 'remember the milk (17 bytes, seen 1)' },
    ]);
    expect(host.state.get('seen')).toBe(2);
    expect(files.get('out/copy.md')).toBe('REMEMBER THE MILK');
    await host.shutdown();
  });

  it(
    'refuses a method that is not granted before any handler runs; a granted method without a handler is ' +
      'NotSupported',
    async () => {
      const files = new Map([['in/notes.md', 'x']]);
      let reads = 0;
      const counting = {
        ...docHandlers(files),
        'fs/read': (p: Record<string, unknown>) => (reads++, docHandlers(files)['fs/read'](p)),
      };
      const denied = await createFakeHost(reader, {
        handlers: counting,
        grants: ['state/get', 'state/set', 'fs/write'],
      });
      const refused = await denied.run();
      expect(refused.result.status).toBe('failed');
      expect(refused.result.error?.message).toMatch(/fs\/read/);
      expect(reads).toBe(0);
      await denied.shutdown();

      const unserved = await createFakeHost(reader, { grants: ['state/get', 'state/set', 'fs/read'] });
      const answer = await unserved.run();
      expect(answer.result.status).toBe('failed');
      expect(answer.result.error?.message).toMatch(/not supported|NotSupported/i);
      await unserved.shutdown();
    },
  );
});
