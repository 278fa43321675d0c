// The gateway's pure parts: retry timing, the circuit breaker's states, SSE parsing, every wire
// format's render → assemble round trip, the scripted model's decisions, run tokens, KB chunking.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../../../host/gateway/circuitBreaker.js';
import { chunkDocument, ftsQuery } from '../../../host/gateway/kb/folderIndex.js';
import { toWire } from '../../../host/gateway/modelComplete.js';
import { parseRetryAfter, RETRY, retryDelay } from '../../../host/gateway/retry.js';
import { isClaims, presentedToken, RunTokens } from '../../../host/gateway/runTokens.js';
import { planReply } from '../../../host/gateway/scripted/script.js';
import { SseParser, sseEvent } from '../../../host/gateway/wire/sse.js';
import { WIRES, type NormalizedReply, type WireFormat } from '../../../host/gateway/wire/index.js';

describe('retries', () => {
  it('Retry-After is read as seconds or an HTTP date; garbage is ignored', () => {
    expect(parseRetryAfter('2')).toBe(2000);
    expect(parseRetryAfter('0.5')).toBe(500);
    expect(parseRetryAfter(new Date(10_000 + 3000).toUTCString(), 10_000)).toBe(3000);
    expect(parseRetryAfter('soon')).toBeUndefined();
    expect(parseRetryAfter(undefined)).toBeUndefined();
  });
  it(
    "the server's Retry-After wins; past the cap the call is not retried; else full jitter under an exponential " +
      'ceiling',
    () => {
      expect(retryDelay(1, 1500)).toBe(1500);
      expect(retryDelay(1, RETRY.maxRetryAfterMs + 1)).toBeUndefined();
      fc.assert(
        fc.property(
          fc.integer({ min: 1, max: 20 }),
          fc.double({ min: 0, max: 0.999999, noNaN: true }),
          (attempt, r) => {
            const d = retryDelay(attempt, undefined, () => r)!;
            return d >= 0 && d < Math.min(RETRY.capMs, RETRY.baseMs * 2 ** (attempt - 1));
          },
        ),
      );
    },
  );
});

describe('circuit breaker', () => {
  it(
    'opens after consecutive failures, refuses while open, lets one probe through, closes on its success and ' +
      're-opens on its failure',
    () => {
      let now = 0;
      const transitions: string[] = [];
      const b = new CircuitBreaker(
        (from, to) => transitions.push(`${from}>${to}`),
        { failureThreshold: 3, openMs: 1000 },
        () => now,
      );
      for (let i = 0; i < 2; i += 1) {
        expect(b.tryAcquire()).toBe(true);
        b.failed();
      }
      b.tryAcquire();
      b.succeeded(); // a success resets the count
      for (let i = 0; i < 3; i += 1) {
        expect(b.tryAcquire()).toBe(true);
        b.failed();
      }
      expect(b.state).toBe('open');
      expect(b.tryAcquire()).toBe(false);
      now = 1000;
      expect(b.tryAcquire()).toBe(true); // the probe
      expect(b.tryAcquire()).toBe(false); // only one
      b.failed();
      expect(b.state).toBe('open');
      now = 2000;
      expect(b.tryAcquire()).toBe(true);
      b.succeeded();
      expect(b.state).toBe('closed');
      expect(transitions).toEqual([
        'closed>open',
        'open>half-open',
        'half-open>open',
        'open>half-open',
        'half-open>closed',
      ]);
    },
  );
});

describe('SSE', () => {
  it('events survive any chunking, multi-line data included', () => {
    const events = [sseEvent('a', { x: 1 }), sseEvent(undefined, 'line one\nline two'), sseEvent('b', '[DONE]')].join(
      '',
    );
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: events.length }), { maxLength: 8 }), (cuts) => {
        const p = new SseParser();
        const points = [0, ...[...cuts].sort((x, y) => x - y), events.length];
        const got = points.slice(1).flatMap((end, i) => p.push(events.slice(points[i], end)));
        return (
          JSON.stringify(got) ===
          JSON.stringify([
            { event: 'a', data: '{"x":1}' },
            { event: undefined, data: 'line one\nline two' },
            { event: 'b', data: '[DONE]' },
          ])
        );
      }),
    );
  });
});

describe('wire formats', () => {
  const reply: NormalizedReply = {
    id: 'r1',
    model: 'm',
    content: [
      { type: 'text', text: 'Let me check — ünïcode ✓.' },
      { type: 'tool_use', id: 'call_1', name: 'lookup', input: { q: 'x', n: 2 } },
    ],
    stopReason: 'tool_use',
    usage: { inputTokens: 12, outputTokens: 7 },
  };
  for (const format of ['anthropic', 'responses', 'chat'] as WireFormat[]) {
    for (const stream of [true, false]) {
      it(
        `${format} ${stream ? 'stream' : 'JSON'}: what the scripted provider renders, the assembler reads back ` +
          `(text, tool call, stop reason, usage)`,
        () => {
          const wire = WIRES[format];
          const texts: string[] = [];
          const assembler = wire.assembler(stream, (t) => texts.push(t));
          const body = wire.render(reply, stream, 3).join('');
          // Feed it in awkward pieces.
          for (let i = 0; i < body.length; i += 7) assembler.push(body.slice(i, i + 7));
          const got = assembler.result();
          expect(got.content).toEqual(reply.content);
          expect(got.stopReason).toBe('tool_use');
          expect(got.usage).toEqual(reply.usage);
          expect(texts.join('')).toBe('Let me check — ünïcode ✓.');
        },
      );
    }
  }
  it("model/complete params become each wire's request, and its last input is the tool result", () => {
    const params = {
      model: 'm',
      system: 'be brief',
      messages: [
        { role: 'user', content: 'find x' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'lookup', input: { q: 'x' } }] },
        { role: 'user', content: [{ type: 'tool_result', toolUseId: 't1', content: 'x is 42' }] },
      ],
      tools: [{ name: 'lookup', inputSchema: { type: 'object' } }],
    };
    for (const format of ['anthropic', 'responses', 'chat'] as WireFormat[]) {
      const body = toWire(format, params, 'm');
      expect(WIRES[format].lastInput(body), format).toEqual({ kind: 'tool_result', text: 'x is 42' });
      expect(WIRES[format].toolNames(body), format).toEqual(['lookup']);
      expect(body.stream).toBe(true);
    }
  });
  it('Anthropic: the last *user* message counts, not a trailing system entry (Claude Code inserts those)', () => {
    expect(
      WIRES.anthropic.lastInput({
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'USE_TOOL:Bash:ls' }] },
          { role: 'system', content: 'reminder' },
        ],
      }),
    ).toEqual({ kind: 'user', text: 'USE_TOOL:Bash:ls' });
  });
});

describe('the scripted model', () => {
  const ctx = (format: WireFormat, offered: string[] = []) => ({ offered, format, requestNumber: 3, callId: 'c' });
  it(
    'directives: tool calls shaped for the wire, failures with a count, delays, long streams, exact text, the ' +
      'greeting',
    () => {
      expect(planReply({ kind: 'user', text: 'USE_TOOL:Bash:echo hi' }, [], ctx('anthropic'))).toMatchObject({
        stopReason: 'tool_use',
        content: [{ name: 'Bash', input: { command: 'echo hi' } }],
      });
      expect(
        planReply({ kind: 'user', text: 'USE_TOOL:Bash:echo hi' }, [], ctx('responses', ['exec_command'])),
      ).toMatchObject({ content: [{ name: 'exec_command', input: { cmd: 'echo hi' } }] });
      expect(
        planReply({ kind: 'user', text: 'USE_TOOL:mcp__tools__add:{"a":1,"b":2}' }, [], ctx('anthropic')),
      ).toMatchObject({ content: [{ name: 'mcp__tools__add', input: { a: 1, b: 2 } }] });
      expect(planReply({ kind: 'user', text: 'FAIL:429x2' }, [], ctx('chat')).error).toEqual({ status: 429, times: 2 });
      expect(planReply({ kind: 'user', text: 'FAIL:500' }, [], ctx('chat')).error).toEqual({
        status: 500,
        times: undefined,
      });
      expect(planReply({ kind: 'user', text: 'DELAY:250 SLOW:10 LONG:3' }, [], ctx('anthropic'))).toMatchObject({
        delayMs: 250,
        chunkDelayMs: 10,
        chunks: 3,
        content: [{ text: 'chunk 1 chunk 2 chunk 3.' }],
      });
      expect(planReply({ kind: 'tool_result', text: 'out' }, [], ctx('anthropic')).content).toEqual([
        { type: 'text', text: 'TOOL_RESULT_SEEN: out' },
      ]);
      expect(planReply(undefined, [], ctx('anthropic')).content).toEqual([
        { type: 'text', text: 'Hello from the scripted model (request #3).' },
      ]);
    },
  );
  it('script rules come first, first match wins', () => {
    const rules = [
      { match: '^refund', reply: 'Refunds take 30 days.' },
      { match: 'refund', error: 503, times: 1 },
    ];
    expect(planReply({ kind: 'user', text: 'refund please' }, rules, ctx('anthropic')).content).toEqual([
      { type: 'text', text: 'Refunds take 30 days.' },
    ]);
    expect(planReply({ kind: 'user', text: 'a refund' }, rules, ctx('anthropic')).error).toEqual({
      status: 503,
      times: 1,
    });
  });
});

describe('run tokens', () => {
  it('minted tokens resolve to their run; revoked ones say so; the header forms are read', () => {
    const tokens = new RunTokens();
    const claims = { runId: 'r1', sessionId: 's', bindingId: 'b', runnerId: 'x' };
    const t = tokens.mint(claims);
    expect(t).toMatch(/^pdk_run_[A-Za-z0-9_-]{43}$/);
    expect(tokens.resolve(t)).toEqual(claims);
    expect(isClaims(tokens.resolve('pdk_run_nope'))).toBe(false);
    tokens.revoke('r1', 'returned its result');
    // A later revocation (the run's teardown) keeps the first reason.
    tokens.revoke('r1');
    expect(tokens.resolve(t)).toEqual({ reason: 'revoked', runId: 'r1', why: 'returned its result' });
    expect(tokens.resolve(undefined)).toEqual({ reason: 'missing' });
    expect(presentedToken({ 'x-api-key': 'k1' })).toBe('k1');
    expect(presentedToken({ authorization: 'Bearer k2' })).toBe('k2');
    expect(presentedToken({ authorization: 'Basic k3' })).toBeUndefined();
  });
});

describe('knowledge base text', () => {
  it('chunks at headings and under the size cap, losing no word', () => {
    const doc = `# A\n\nalpha beta\n\n## B\n\n${'gamma '.repeat(400)}\n\ndelta`;
    const chunks = chunkDocument(doc);
    expect(chunks[0]).toBe('# A\n\nalpha beta');
    expect(chunks.every((c) => c.length <= 1200 * 2)).toBe(true);
    expect(chunks.join(' ').match(/gamma/g)).toHaveLength(400);
    expect(chunks.at(-1)).toContain('delta');
  });
  it('queries become quoted words only: no FTS syntax gets through', () => {
    expect(ftsQuery('refund OR "x" NEAR(y) col:z*')).toBe('"refund" OR "OR" OR "x" OR "NEAR" OR "y" OR "col" OR "z"');
    expect(ftsQuery('?!')).toBeUndefined();
  });
});
