// The local-agent runner under bwrap: a tool-using loop whose every model, knowledge and tool call
// goes through the host (scripted model, FTS5 knowledge base, a real MCP server).
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunOutcome } from '../../host/process/outcome.js';
import type { Update } from '../../sdk/protocol/types.js';
import { repoPath } from '../helpers/fixtures.js';
import { chatEvent, tempHost } from '../helpers/host.js';
import { rawDb } from '../helpers/rawDb.js';

const host = tempHost({ limits: { wallClockMs: 60_000 } });
afterAll(() => host.close());

async function dispatch(
  bot: string,
  text: string,
  updates: Update[] = [],
  signal?: AbortSignal,
): Promise<{ outcome: RunOutcome; updates: Update[] }> {
  const ticket = await host.dispatcher.dispatch(chatEvent({ bot, text }), { onUpdate: (u) => updates.push(u) });
  if (ticket.status === 'duplicate') throw new Error('duplicate');
  if (signal)
    signal.addEventListener('abort', () => host.dispatcher.cancel(ticket.runId, 'test cancel'), { once: true });
  return { outcome: await ticket.done, updates };
}
const outputOf = (o: RunOutcome) => (o.result?.output?.parts[0] as { text?: string } | undefined)?.text ?? '';

describe('local-agent runner (bwrap, everything through the host)', () => {
  beforeAll(() => {
    const kb = mkdtempSync(join(tmpdir(), 'paddock-la-kb-'));
    mkdirSync(join(kb, 'policies'));
    writeFileSync(join(kb, 'policies', 'refunds.md'), '# Refunds\n\nRefunds are paid within 30 days of the return.\n');
    const agent = (id: string, bot: string, config: Record<string, unknown> = {}) => ({
      id,
      runner: 'local-agent',
      route: { bot },
      sandbox: 'bwrap',
      grants: { models: ['sm'], knowledgeBases: ['handbook'], mcpServers: ['tools'] },
      config,
    });
    host.apply({
      resources: {
        models: [{ id: 'sm', provider: 'scripted', model: 'scripted-1' }],
        knowledgeBases: [{ id: 'handbook', path: kb }],
        mcpServers: [
          {
            id: 'tools',
            command: process.execPath,
            args: [repoPath('test/fixtures/mcp/server.mjs')],
            tools: { allow: ['echo', 'add'] },
          },
        ],
      },
      bindings: [agent('la', 'la'), agent('la-1', 'la-1', { maxTurns: 1 })],
    });
  });

  it('a plain answer streams as deltas and completes', async () => {
    const { outcome, updates } = await dispatch('la', 'LONG:40');
    expect(outcome.status, outcome.reason).toBe('completed');
    const text = `${Array.from({ length: 40 }, (_, i) => `chunk ${i + 1}`).join(' ')}.`;
    expect(outputOf(outcome)).toBe(text);
    // Streamed in more than one piece (the redactors hold back the last ~200 characters until the answer ends).
    const deltas = updates.filter((u) => u.kind === 'message.delta').map((u) => (u as { text: string }).text);
    expect(deltas.join('')).toBe(text);
    expect(deltas.filter(Boolean).length).toBeGreaterThan(1);
    expect(outcome.result?.usage).toMatchObject({ turns: 1, model: 'sm' });
  });

  it('a knowledge-base tool round: kb/retrieve through the host, the result back to the model', async () => {
    const { outcome, updates } = await dispatch('la', 'USE_TOOL:search_handbook:{"query":"refunds"}');
    expect(outcome.status, outcome.reason).toBe('completed');
    expect(outputOf(outcome)).toContain('TOOL_RESULT_SEEN: [Refunds] # Refunds');
    expect(updates).toContainEqual(
      expect.objectContaining({
        kind: 'tool.finished',
        status: 'ok',
        output: expect.stringContaining('within 30 days'),
      }),
    );
    expect(outcome.result?.usage).toMatchObject({ turns: 2 });
  });

  it('an MCP tool round: tool/list shows only the allowed tools, tool/call runs one', async () => {
    const { outcome } = await dispatch('la', 'USE_TOOL:tools__add:{"a":2,"b":40}');
    expect(outcome.status, outcome.reason).toBe('completed');
    expect(outputOf(outcome)).toBe('TOOL_RESULT_SEEN: 42');
    const denied = await dispatch('la', 'USE_TOOL:tools__delete_everything:{}');
    // Not listed, so the agent has no such tool; the server never sees the call.
    expect(outputOf(denied.outcome)).toBe('TOOL_RESULT_SEEN: no such tool');
  });

  it('max turns: a model that keeps asking for tools is stopped with a clear reason', async () => {
    const { outcome } = await dispatch('la-1', 'USE_TOOL:tools__echo:{"text":"again"}');
    expect(outcome.status).toBe('failed');
    expect(outcome.reason).toContain('maxTurns (1)');
  });

  it('cancel during a model call ends the run cancelled at once', async () => {
    const started = Date.now();
    // The scripted model waits 30 s before answering.
    const ticket = await host.dispatcher.dispatch(chatEvent({ bot: 'la', text: 'DELAY:30000' }));
    if (ticket.status === 'duplicate') throw new Error('duplicate');
    // Cancel once the runner's model/complete is in flight: its budget reservation is held (its
    // run.request is recorded only when it is decided, i.e. answered).
    const pending = rawDb(host.store).prepare('SELECT 1 FROM gateway_reservations WHERE run_id = ?');
    while (!pending.get(ticket.runId)) await new Promise((r) => setTimeout(r, 20));
    host.dispatcher.cancel(ticket.runId, 'test cancel');
    const outcome = await ticket.done;
    expect(outcome.status).toBe('cancelled');
    expect(Date.now() - started).toBeLessThan(25_000);
  });
});
