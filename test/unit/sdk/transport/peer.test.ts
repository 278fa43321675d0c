import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ErrorCodes } from '../../../../sdk/protocol/errorCodes.js';
import { RpcError } from '../../../../sdk/protocol/rpcError.js';
import { attachPeer, lineWriter } from '../../../../sdk/transport/attach.js';
import { JsonRpcPeer, type ProtocolViolation } from '../../../../sdk/transport/peer.js';

/** Two peers wired back to back over in-memory streams. */
function pair() {
  const aToB = new PassThrough();
  const bToA = new PassThrough();
  const violations: { a: ProtocolViolation[]; b: ProtocolViolation[] } = { a: [], b: [] };
  const handlerErrors: unknown[] = [];
  const a = new JsonRpcPeer({ send: lineWriter(aToB), onViolation: (v) => violations.a.push(v) });
  const b = new JsonRpcPeer({
    send: lineWriter(bToA),
    onViolation: (v) => violations.b.push(v),
    onHandlerError: (_m, e) => handlerErrors.push(e),
    answerInvalid: true,
    unknownNotifications: 'violation',
  });
  attachPeer(a, bToA, () => undefined, { maxLineBytes: 1 << 20 });
  attachPeer(b, aToB, () => undefined, { maxLineBytes: 1 << 20 });
  const fromB: string[] = [];
  bToA.on('data', (chunk: Buffer) => fromB.push(...chunk.toString().split('\n').filter(Boolean)));
  return { a, b, aToB, violations, handlerErrors, fromB };
}

const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: unknown) => (e instanceof RpcError ? e.code : `not RpcError: ${String(e)}`),
  );

describe('JsonRpcPeer', () => {
  it('validates params before the handler and answers -32602 with the issues', async () => {
    const { a, b } = pair();
    let called = 0;
    b.onRequest('add', z.object({ x: z.number(), y: z.number() }), (p) => {
      called++;
      return { sum: p.x + p.y };
    });
    await expect(a.request('add', { x: 1, y: 2 }, z.object({ sum: z.number() }))).resolves.toEqual({ sum: 3 });
    const error = await a.request('add', { x: 'one' }, z.unknown()).catch((e: RpcError) => e);
    expect(error).toBeInstanceOf(RpcError);
    expect((error as RpcError).code).toBe(ErrorCodes.InvalidParams);
    expect((error as RpcError).message).toMatch(/Invalid params for add/);
    expect(called).toBe(1);
  });

  it('answers an unknown method with -32601', async () => {
    const { a } = pair();
    expect(await codeOf(a.request('nope', {}, z.unknown()))).toBe(ErrorCodes.MethodNotFound);
  });

  it('maps a thrown non-RpcError to -32603 without leaking its message', async () => {
    const { a, b, handlerErrors } = pair();
    b.onRequest('boom', z.object({}), () => {
      throw new Error('secret internal detail /etc/shadow');
    });
    const error = (await a.request('boom', {}, z.unknown()).catch((e: unknown) => e)) as RpcError;
    expect(error.code).toBe(ErrorCodes.InternalError);
    expect(error.message).not.toContain('secret');
    expect(handlerErrors).toHaveLength(1);
  });

  it('passes a thrown RpcError through with its code and data', async () => {
    const { a, b } = pair();
    b.onRequest('deny', z.object({}), () => {
      throw RpcError.policyDenied('no', { deniedBy: 'test.rule' });
    });
    const error = (await a.request('deny', {}, z.unknown()).catch((e: unknown) => e)) as RpcError;
    expect(error.code).toBe(ErrorCodes.PolicyDenied);
    expect(error.data).toEqual({ deniedBy: 'test.rule' });
    expect(error.codeName).toBe('PolicyDenied');
  });

  it('rejects a result that fails its schema as InvalidMessage and reports a violation', async () => {
    const { a, b, violations } = pair();
    b.onRequest('get', z.object({}), () => ({ wrong: true }));
    expect(await codeOf(a.request('get', {}, z.object({ right: z.boolean() })))).toBe(ErrorCodes.InvalidMessage);
    expect(violations.a[0]?.reason).toMatch(/invalid get result: right/);
  });

  it('close() rejects every pending request with the given error; later requests fail at once', async () => {
    const { a, b } = pair();
    b.onRequest('never', z.object({}), () => new Promise(() => undefined));
    const pending = [a.request('never', {}, z.unknown()), a.request('never', {}, z.unknown())];
    await new Promise((r) => setImmediate(r));
    expect(a.pendingCount).toBe(2);
    a.close(RpcError.runnerExited('killed'));
    expect(await Promise.all(pending.map(codeOf))).toEqual([ErrorCodes.RunnerExited, ErrorCodes.RunnerExited]);
    expect(a.pendingCount).toBe(0);
    expect(await codeOf(a.request('never', {}, z.unknown()))).toBe(ErrorCodes.RunnerExited);
  });

  it('times out a request with RunnerUnresponsive and honours an AbortSignal', async () => {
    const { a, b } = pair();
    b.onRequest('slow', z.object({}), () => new Promise(() => undefined));
    expect(await codeOf(a.request('slow', {}, z.unknown(), { timeoutMs: 30 }))).toBe(ErrorCodes.RunnerUnresponsive);
    const controller = new AbortController();
    const p = a.request('slow', {}, z.unknown(), { signal: controller.signal });
    controller.abort('stop');
    expect(await codeOf(p)).toBe(ErrorCodes.RequestCancelled);
    expect(a.pendingCount).toBe(0);
  });

  it('validates notifications; invalid or unknown ones are violations, never handler calls', async () => {
    const { a, b, violations } = pair();
    const seen: unknown[] = [];
    b.onNotification('tick', z.object({ n: z.int() }), (p) => seen.push(p.n));
    a.notify('tick', { n: 1 });
    a.notify('tick', { n: 'x' });
    a.notify('tock', {});
    await new Promise((r) => setTimeout(r, 20));
    expect(seen).toEqual([1]);
    expect(violations.b.map((v) => v.code)).toEqual([ErrorCodes.InvalidMessage, ErrorCodes.MethodNotFound]);
  });

  it(
    'answers a non-JSON line with -32700 and a non-request with ' + '-32600 (id null) when answerInvalid is set',
    async () => {
      const { aToB, violations, fromB } = pair();
      aToB.write('not json at all\n');
      aToB.write('[1,2,3]\n');
      await new Promise((r) => setTimeout(r, 20));
      expect(violations.b.map((v) => v.code)).toEqual([ErrorCodes.ParseError, ErrorCodes.InvalidRequest]);
      const answers = fromB.map((l) => JSON.parse(l) as { id: unknown; error: { code: number } });
      expect(answers.map((m) => [m.id, m.error.code])).toEqual([
        [null, ErrorCodes.ParseError],
        [null, ErrorCodes.InvalidRequest],
      ]);
    },
  );
});
