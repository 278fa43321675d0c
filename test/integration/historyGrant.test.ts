// The history grant end to end: the host projects earlier turns of the session (redacted, this
// session only) and the local-agent runner hands them to the (scripted) model, which says what it saw.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunOutcome } from '../../host/process/outcome.js';
import { explainBinding, renderExplanation } from '../../host/bindings/explain.js';
import { discoverRunners } from '../../host/plugins/catalog.js';
import { chatEvent, tempHost } from '../helpers/host.js';
import { HARNESS_DIR } from '../../host/harness/harnesses.js';
import { ConfigRepo } from '../../host/bindings/configRepo.js';
import type { Binding } from '../../host/bindings/schema.js';

const host = tempHost({ limits: { wallClockMs: 60_000 } });
afterAll(() => host.close());

async function say(bot: string, conversation: string, text: string): Promise<RunOutcome> {
  const ticket = await host.dispatcher.dispatch(chatEvent({ bot, text, conversation: { id: conversation } }));
  if (ticket.status === 'duplicate') throw new Error('duplicate');
  return ticket.done;
}
const digest = (text: string) => createHash('sha256').update(text).digest('hex');
const outputOf = (o: RunOutcome) => (o.result?.output?.parts[0] as { text?: string } | undefined)?.text ?? '';

describe('grants.history (local-agent, scripted model)', () => {
  beforeAll(() => {
    const agent = (id: string, history: unknown) => ({
      id,
      runner: 'local-agent',
      route: { bot: id },
      sandbox: 'bwrap',
      grants: { models: ['sm'], ...(history === undefined ? {} : { history }) },
    });
    host.apply({
      resources: { models: [{ id: 'sm', provider: 'scripted', model: 'scripted-1' }] },
      bindings: [
        {
          id: 'h-digest',
          runner: 'digests-history',
          route: { bot: 'h-digest' },
          sandbox: 'process',
          grants: { history: { messages: 50 } },
        },
        agent('h-all', { messages: 50 }),
        agent('h-default', undefined),
        agent('h-none', 'none'),
        agent('h-one', { messages: 1 }),
        agent('h-tokens', { tokens: 4 }),
      ],
    });
  });

  it('a second message of a conversation sees the first (question and answer), in order', async () => {
    expect(outputOf(await say('h-all', 'a', 'SAY:the capital is Paris'))).toBe('the capital is Paris');
    const second = await say('h-all', 'a', 'SEEN_HISTORY what did I ask?');
    expect(second.status, second.reason).toBe('completed');
    expect(outputOf(second)).toBe('SEEN 2: user: SAY:the capital is Paris | assistant: the capital is Paris');
    const third = await say('h-all', 'a', 'SEEN_HISTORY again');
    expect(outputOf(third)).toBe(
      `SEEN 4: user: SAY:the capital is Paris | assistant: the capital is Paris | user: SEEN_HISTORY what did ` +
        `I ask? | assistant: ${outputOf(second).slice(0, 200)}`,
    );
  });

  it('without the grant (default or "none") a run sees only its own message', async () => {
    for (const bot of ['h-default', 'h-none']) {
      await say(bot, 'a', 'SAY:remember me');
      expect(outputOf(await say(bot, 'a', 'SEEN_HISTORY'))).toBe('SEEN 0: ');
    }
  });

  it('a window of 1 message sees only the last one; a token window only what fits whole', async () => {
    await say('h-one', 'w', 'SAY:first');
    await say('h-one', 'w', 'SAY:second');
    // The last earlier message is the answer "second"; the runner puts a placeholder user turn first.
    expect(outputOf(await say('h-one', 'w', 'SEEN_HISTORY'))).toBe(
      'SEEN 2: user: (earlier turns omitted) | assistant: second',
    );
    await say('h-tokens', 'w', 'SAY:0123456789abcdef');
    await say('h-tokens', 'w', 'SAY:tiny');
    // 4 tokens ≈ 16 characters: "tiny" (1) fits, "SAY:tiny" (2) fits, the 16-character answer (4) does not.
    expect(outputOf(await say('h-tokens', 'w', 'SEEN_HISTORY'))).toBe('SEEN 2: user: SAY:tiny | assistant: tiny');
  });

  it("another conversation's history never appears", async () => {
    await say('h-all', 'secret-room', 'SAY:the launch code is swordfish-42');
    const other = await say('h-all', 'elsewhere', 'SEEN_HISTORY');
    expect(outputOf(other)).toBe('SEEN 0: ');
    const sameRoom = await say('h-all', 'secret-room', 'SEEN_HISTORY');
    expect(outputOf(sameRoom)).toContain('swordfish-42');
    // And another binding on the same conversation id is another session.
    expect(outputOf(await say('h-one', 'secret-room', 'SEEN_HISTORY'))).toBe('SEEN 0: ');
  });

  it(
    'a secret in an earlier turn is redacted in the projected history, even one the host learned after storing ' + 'it',
    async () => {
      const canary = 'hist-canary-3f9d2c7a1b6e4d8f';
      const first = `noted ${canary}`;
      await say('h-digest', 'leak', first);
      // The host learns of the secret only now (e.g. a key referenced by a later apply): the stored
      // turn still holds it, so only the access's own redaction can keep it from the next run.
      host.redactor.add(canary);
      const digests = JSON.parse(outputOf(await say('h-digest', 'leak', 'what now?'))) as string[];
      expect(digests).toHaveLength(2);
      expect(digests[0]).toBe(`user:${digest(host.redactor.text(first))}`);
      expect(host.redactor.text(first)).not.toContain(canary);
      // The same through the local agent and the model.
      await say('h-all', 'leak', `SAY:noted ${canary}`);
      const next = await say('h-all', 'leak', 'SEEN_HISTORY');
      expect(outputOf(next)).toContain('[REDACTED]');
      expect(outputOf(next)).not.toContain(canary);
      // Nothing the second run stored (its updates, its model call's record, its result) holds it.
      const events = host.store.readEvents(host.store.run(next.runId)!.sessionId).filter((e) => e.runId === next.runId);
      expect(events.length).toBeGreaterThan(3);
      expect(JSON.stringify(events)).not.toContain(canary);
    },
  );

  it(
    'only earlier turns: answers of failed runs and tool ' + "traffic are left out, the run's own message too",
    async () => {
      await say('h-digest', 'order', 'one');
      const failed = await say('h-digest', 'order', 'FAIL please');
      expect(failed.status).toBe('failed');
      const third = JSON.parse(outputOf(await say('h-digest', 'order', 'three'))) as string[];
      // one, its answer (the digest list "[]"), the failed message without an answer; not "three".
      expect(third).toEqual([`user:${digest('one')}`, `assistant:${digest('[]')}`, `user:${digest('FAIL please')}`]);
    },
  );

  it('explain shows the grant', () => {
    const repo = new ConfigRepo(host.store);
    const e = explainBinding(
      repo.binding('h-one').spec as Binding,
      discoverRunners(host.config.runnerDirs),
      repo.snapshot().resources,
      host.config.limits,
      { dataDir: host.dataDir, harnessDir: HARNESS_DIR, mountRoots: [] },
    );
    expect(e.access?.history).toEqual({ messages: 1 });
    expect(renderExplanation(e)).toContain(
      'history: the last 1 messages of this conversation (user messages and completed answers, redacted)',
    );
  });
});
