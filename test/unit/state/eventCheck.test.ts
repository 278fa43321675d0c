import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkEventData } from '../../../host/state/eventCheck.js';
import { EVENT_DATA } from '../../../host/state/events.js';

/** Does the store's check take `data` as a `run.update`? */
const takes = (data: unknown) => {
  try {
    checkEventData('run.update', data);
    return true;
  } catch {
    return false;
  }
};
const zodTakes = (data: unknown) => EVENT_DATA['run.update'].safeParse(data).success;

/** Values that sit on the edges of each field's type. */
const odd = fc.constantFrom<unknown>(
  undefined,
  null,
  0,
  -0,
  1,
  1.5,
  -1,
  2 ** 53,
  Number.MAX_SAFE_INTEGER,
  Number.NaN,
  Infinity,
  '',
  'x',
  '1',
  'message.delta',
  'message',
  true,
  [],
  ['message.delta'],
  {},
  Object.create(null),
  new Date(0),
  new String('text'),
  10n,
);
const update = fc.record(
  {
    kind: fc.oneof(fc.constant('message.delta'), odd),
    text: fc.oneof(fc.string(), odd),
    messageId: fc.oneof(fc.string(), odd),
    extra: fc.anything(),
  },
  { requiredKeys: [] },
);
const data = fc.record(
  { runnerSeq: fc.oneof(fc.integer({ min: -3, max: 2 ** 40 }), odd), update: fc.oneof(update, odd), other: odd },
  { requiredKeys: [] },
);

describe('checkEventData', () => {
  it("takes a run.update exactly when the event schema does (the hand check never widens zod's)", () => {
    fc.assert(
      fc.property(fc.oneof(data, fc.anything()), (value) => {
        expect(takes(value)).toBe(zodTakes(value));
      }),
      { numRuns: 5_000, seed: 16 },
    );
  });

  it('takes a plain delta and refuses a broken one with the field named', () => {
    checkEventData('run.update', { runnerSeq: 1, update: { kind: 'message.delta', text: 'hi', messageId: 'm' } });
    checkEventData('run.update', { runnerSeq: 2, update: { kind: 'message.delta', text: '' }, note: 'kept' });
    expect(() => checkEventData('run.update', { runnerSeq: 0, update: { kind: 'message.delta', text: 'hi' } })).toThrow(
      /invalid run.update event: runnerSeq/,
    );
    expect(() => checkEventData('run.update', { runnerSeq: 1, update: { kind: 'message.delta', text: 5 } })).toThrow(
      /invalid run.update event: update/,
    );
    expect(() => checkEventData('run.update', { runnerSeq: 1, update: { kind: 'log', level: 'info' } })).toThrow(
      /invalid run.update event: update/,
    );
  });
});
