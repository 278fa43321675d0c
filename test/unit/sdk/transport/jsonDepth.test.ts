import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ErrorCodes } from '../../../../sdk/protocol/errorCodes.js';
import { MAX_JSON_DEPTH, jsonDepth, shallowJson } from '../../../../sdk/transport/jsonDepth.js';
import { JsonRpcPeer, type ProtocolViolation } from '../../../../sdk/transport/peer.js';

/** Depth as a recursive walk sees it (the reference; only used on small values). */
function depthOf(value: unknown): number {
  if (Array.isArray(value)) return 1 + Math.max(0, ...value.map(depthOf));
  if (value !== null && typeof value === 'object') return 1 + Math.max(0, ...Object.values(value).map(depthOf));
  return 0;
}

const nested = (levels: number, open: string, close: string, inner = '1') =>
  `${open.repeat(levels)}${inner}${close.repeat(levels)}`;

describe('jsonDepth / shallowJson', () => {
  it('agrees with a recursive walk on any JSON value, as bytes and as a string', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 12 }), (value) => {
        const text = JSON.stringify(value);
        expect(jsonDepth(text, 1000)).toBe(depthOf(value));
        expect(jsonDepth(Buffer.from(text), 1000)).toBe(depthOf(value));
        // Cutting below every container keeps scalars and turns the first level down into null.
        expect(JSON.parse(shallowJson(text, 1000))).toEqual(JSON.parse(text));
      }),
    );
  });

  it('is not fooled by brackets, quotes and backslashes inside strings', () => {
    const tricky = JSON.stringify({ a: '[[[[{{{{', b: '\\"[[[', c: ['\\\\', '"]]]"'], d: 'ü[€' });
    expect(jsonDepth(tricky, 64)).toBe(2);
    expect(jsonDepth(Buffer.from(tricky), 64)).toBe(2);
    expect(JSON.parse(shallowJson(tricky, 1))).toEqual({ a: '[[[[{{{{', b: '\\"[[[', c: null, d: 'ü[€' });
  });

  it('stops at the limit without recursion, even a million levels down', () => {
    for (const [open, close] of [
      ['[', ']'],
      ['{"k":', '}'],
      ['[{"a":', '}]'],
    ]) {
      const text = nested(1_000_000, open!, close!);
      expect(jsonDepth(text, MAX_JSON_DEPTH)).toBe(MAX_JSON_DEPTH + 1);
      expect(JSON.parse(shallowJson(`{"id":1,"params":${text}}`, 1))).toEqual({ id: 1, params: null });
    }
  });
});

describe('a JsonRpcPeer refuses messages nested too deep, by their envelope only', () => {
  function peer() {
    const sent: Record<string, unknown>[] = [];
    const violations: ProtocolViolation[] = [];
    const refused: { method: string; params: unknown; code: number }[] = [];
    const handled: unknown[] = [];
    const p = new JsonRpcPeer({
      send: (line) => sent.push(JSON.parse(line) as Record<string, unknown>),
      onViolation: (v) => violations.push(v),
      onRequestTooDeep: (method, params, error) => refused.push({ method, params, code: error.code }),
    });
    p.onRequest('state/set', z.looseObject({}), (params) => handled.push(params));
    p.onNotification('run/update', z.looseObject({}), (params) => handled.push(params));
    return { p, sent, violations, refused, handled };
  }

  const value = (depth: number) => nested(depth, '[', ']');
  // Envelope (1) + params (2) put the value's own levels at 3 and below.
  const request = (depth: number) =>
    `{"jsonrpc":"2.0","id":7,"method":"state/set","params":{"runId":"r1","key":"k","value":${value(depth)}}}`;

  it.each([MAX_JSON_DEPTH - 3, MAX_JSON_DEPTH - 2])(
    'a request whose value nests %i levels (the whole message: 2 more) is handled',
    (depth) => {
      const { p, sent, handled } = peer();
      p.receiveLine(request(depth));
      return new Promise((resolve) => setImmediate(resolve)).then(() => {
        expect(handled).toHaveLength(1);
        expect(sent[0]).toMatchObject({ id: 7, result: {} });
      });
    },
  );

  it.each([MAX_JSON_DEPTH - 1, 999, 1001, 1100, 100_000, 1_000_000])(
    'a request nesting %i levels inside its params is answered QuotaExceeded (maxJsonDepth) and never handled',
    (depth) => {
      const { p, sent, violations, refused, handled } = peer();
      p.receiveLine(Buffer.from(request(depth)));
      expect(handled).toEqual([]);
      expect(violations).toEqual([]);
      expect(refused).toEqual([
        { method: 'state/set', params: { runId: 'r1', key: 'k', value: null }, code: ErrorCodes.QuotaExceeded },
      ]);
      expect(sent).toEqual([
        {
          jsonrpc: '2.0',
          id: 7,
          error: {
            code: ErrorCodes.QuotaExceeded,
            message:
              `state/set: the request nests deeper than ${MAX_JSON_DEPTH} levels of arrays and objects ` +
              `(protocol limit maxJsonDepth)`,
            data: { limit: 'maxJsonDepth', maxDepth: MAX_JSON_DEPTH },
          },
        },
      ]);
    },
  );

  it('a notification or an answer nested too deep is a violation naming the limit', () => {
    const { p, violations, handled } = peer();
    p.receiveLine(
      `{"jsonrpc":"2.0","method":"run/update","params":{"update":{"kind":"log","data":${nested(5000, '{"a":', '}')}}}}`,
    );
    p.receiveLine(`{"jsonrpc":"2.0","id":3,"result":{"status":"completed","output":${value(100)}}}`);
    p.receiveLine(value(70));
    expect(handled).toEqual([]);
    expect(violations).toEqual([
      {
        code: ErrorCodes.InvalidMessage,
        reason:
          `a run/update notification nests deeper than ${MAX_JSON_DEPTH} levels of arrays and objects (protocol ` +
          `limit maxJsonDepth)`,
      },
      {
        code: ErrorCodes.InvalidMessage,
        reason:
          `the answer to request 3 nests deeper than ${MAX_JSON_DEPTH} levels of arrays and objects (protocol ` +
          `limit maxJsonDepth)`,
      },
      {
        code: ErrorCodes.InvalidMessage,
        reason:
          `a message nests deeper than ${MAX_JSON_DEPTH} levels of arrays and objects (protocol limit ` +
          `maxJsonDepth)`,
      },
    ]);
  });

  it('a notification handler that throws is reported, never thrown into the reader', () => {
    const errors: unknown[] = [];
    const p = new JsonRpcPeer({
      send: () => undefined,
      onViolation: () => undefined,
      onHandlerError: (_m, e) => errors.push(e),
    });
    p.onNotification('run/update', z.looseObject({}), () => {
      throw new RangeError('Maximum call stack size exceeded');
    });
    expect(() => p.receiveLine('{"jsonrpc":"2.0","method":"run/update","params":{}}')).not.toThrow();
    expect(errors).toEqual([new RangeError('Maximum call stack size exceeded')]);
  });
});
