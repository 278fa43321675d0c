// The knowledge-base MCP endpoint (/mcp/_kb) over real HTTP with the official MCP client: only the
// run's granted knowledge bases are listed and answered, through the same retrieval, redaction
// and audit as kb/retrieve; a run without a grant, a missing or foreign token are refused.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, describe, expect, it } from 'vitest';
import { KnowledgeBaseResourceSchema } from '../../host/bindings/schema.js';
import { KB_MCP_SERVER, kbToolName } from '../../host/gateway/mcp/kbToolNames.js';
import { openGatewayRun } from '../helpers/gatewayRun.js';
import { tempHost } from '../helpers/host.js';
import { rawDb } from '../helpers/rawDb.js';

const root = mkdtempSync(join(tmpdir(), 'paddock-kbmcp-'));
for (const [kb, file, text] of [
  ['a', 'refunds.md', '# Refunds\n\nRefunds are paid within 14 days (marker alpha-77).\n'],
  [
    'a',
    'canary.md',
    `# Keys\n\nThe deploy key is ${'sk-ant-api03-kbcanary' + 'Q'.repeat(40)}AA for the refund robot.\n`,
  ],
  ['b', 'secret.md', '# Board minutes\n\nRefunds will be cut next year (marker beta-33).\n'],
] as const) {
  mkdirSync(join(root, kb), { recursive: true });
  writeFileSync(join(root, kb, file), text);
}
const kbs = [
  KnowledgeBaseResourceSchema.parse({ id: 'a', name: 'Policies', path: join(root, 'a') }),
  KnowledgeBaseResourceSchema.parse({ id: 'b.board', path: join(root, 'b') }),
  KnowledgeBaseResourceSchema.parse({ id: 'b_board', path: join(root, 'a') }),
];
const host = tempHost();
afterAll(() => host.close());

let n = 0;
async function openRun(granted: string[]) {
  n += 1;
  return openGatewayRun(host, {
    runId: `run-kbmcp-${process.pid}-${n}`,
    resources: { knowledgeBases: kbs },
    access: {
      knowledgeBases: kbs
        .filter((k) => granted.includes(k.id))
        .map((k) => ({ id: k.id, ...(k.name ? { name: k.name } : {}) })),
    },
  });
}
async function connect(baseUrl: string, token: string | undefined) {
  const client = new Client({ name: 'test-harness', version: '1' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp/${KB_MCP_SERVER}`), {
      requestInit: { headers: token ? { authorization: `Bearer ${token}` } : {} },
    }),
  );
  return client;
}
const audit = (type: string, runId: string) =>
  (
    rawDb(host.store)
      .prepare('SELECT data FROM audit WHERE type = ? AND run_id = ? ORDER BY seq')
      .pluck()
      .all(type, runId) as string[]
  ).map((d) => JSON.parse(d) as Record<string, unknown>);
const textOf = (r: unknown) => ((r as { content: { text: string }[] }).content ?? []).map((c) => c.text).join('\n');

describe('/mcp/_kb: granted knowledge bases as MCP search tools', () => {
  it(
    'lists and answers only the granted knowledge bases; the same ' + 'retrieval, redaction and audit as kb/retrieve',
    async () => {
      const run = await openRun(['a']);
      const client = await connect(run.baseUrl, run.token);
      try {
        expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['search_a']);
        const found = await client.callTool({ name: 'search_a', arguments: { query: 'refunds days', topK: 500 } });
        expect(found.isError).toBeFalsy();
        expect(textOf(found)).toContain('alpha-77');
        expect(textOf(found)).not.toContain('beta-33');
        expect(audit('kb.retrieve', run.run.claims.runId)).toEqual([
          expect.objectContaining({ knowledgeBase: 'a', kind: 'folder', topK: 20 }),
        ]);
        // A key-shaped string in a document is redacted like every answer, in the text and the structured chunks.
        const keyed = await client.callTool({ name: 'search_a', arguments: { query: 'deploy key' } });
        expect(textOf(keyed)).toContain('The deploy key is [REDACTED');
        expect(JSON.stringify(keyed)).not.toContain('kbcanary');

        // Another knowledge base that exists on the host but is not granted: not listed, not answered.
        for (const name of [kbToolName('b.board'), 'search_b_board', 'search_a\u0000', '../search_a']) {
          const refused = await client.callTool({ name, arguments: { query: 'refunds' } });
          expect(refused.isError, name).toBe(true);
          expect(textOf(refused)).not.toContain('beta-33');
        }
        for (const args of [{}, { query: '' }, { query: 42 }, { query: '   ' }])
          expect((await client.callTool({ name: 'search_a', arguments: args })).isError).toBe(true);
        // FTS syntax in the query is text, not a query language.
        expect(
          (await client.callTool({ name: 'search_a', arguments: { query: '"refunds" OR * NEAR(a b) -- ;' } })).isError,
        ).toBeFalsy();
        expect(audit('kb.retrieve', run.run.claims.runId).every((r) => r.knowledgeBase === 'a')).toBe(true);
      } finally {
        await client.close();
        await run.close();
      }
    },
  );

  it('two ids with one tool name both stay reachable, each answering from its own folder', async () => {
    const run = await openRun(['b.board', 'b_board']);
    const client = await connect(run.baseUrl, run.token);
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['search_b_board', 'search_b_board_2']);
      expect(textOf(await client.callTool({ name: 'search_b_board', arguments: { query: 'refunds' } }))).toContain(
        'beta-33',
      );
      expect(textOf(await client.callTool({ name: 'search_b_board_2', arguments: { query: 'refunds' } }))).toContain(
        'alpha-77',
      );
    } finally {
      await client.close();
      await run.close();
    }
  });

  it('a run with no knowledge base granted, a missing token and a revoked token are refused and audited', async () => {
    const none = await openRun([]);
    const granted = await openRun(['a']);
    try {
      const bare = await fetch(`${none.baseUrl}/mcp/_kb`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${none.token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      expect(bare.status).toBe(403);
      expect(audit('kb.denied', none.run.claims.runId)).toEqual([
        expect.objectContaining({ deniedBy: 'binding.grants.knowledgeBases' }),
      ]);
      await expect(connect(granted.baseUrl, undefined)).rejects.toThrow();
      await expect(connect(granted.baseUrl, none.token)).rejects.toThrow(); // the token of a run with no grant
      const token = granted.token;
      await granted.close();
      await expect(connect(none.baseUrl, token)).rejects.toThrow(/revoked|401/);
    } finally {
      await none.close();
    }
  });
});
