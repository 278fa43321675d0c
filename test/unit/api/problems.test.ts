import { describe, expect, it } from 'vitest';
import { HostError } from '../../../host/errors.js';
import { ApiProblem, pathOfPointer, problemBody, problemOf } from '../../../host/api/problems.js';

describe('problems', () => {
  it('spells field paths like the CLI (a.b[0].c), with a prefix for params and query', () => {
    expect(pathOfPointer('/message/parts/0/text')).toBe('message.parts[0].text');
    expect(pathOfPointer('/')).toBe('');
    expect(pathOfPointer('/id', 'params')).toBe('params.id');
  });

  it('maps dispatch refusals to their statuses, queue_full with Retry-After', () => {
    const cases: [string, number][] = [
      ['no_binding', 422],
      ['binding_disabled', 422],
      ['session_paused', 409],
      ['queue_full', 429],
      ['invalid_event', 400],
    ];
    for (const [reason, status] of cases) {
      const p = problemOf(new HostError('DISPATCH_REFUSED', `refused: ${reason}`, { reason, sessionId: 'ses_1' }))!;
      expect([reason, p.status, p.code]).toEqual([reason, status, reason]);
      expect(p.headers['retry-after']).toBe(reason === 'queue_full' ? '1' : undefined);
    }
  });

  it('an oversized event is 413; an invalid one 400 naming its field', () => {
    const big = problemOf(new HostError('INVALID_INPUT', 'too big', { reason: 'event_too_large' }))!;
    expect([big.status, big.code]).toEqual([413, 'payload_too_large']);
    const bad = problemOf(
      new HostError('INVALID_INPUT', 'event.id: bad', { reason: 'invalid_event', field: 'event.id' }),
    )!;
    expect([bad.status, bad.extra.errors]).toEqual([400, [{ path: 'event.id', message: 'event.id: bad' }]]);
  });

  it('a store that cannot be reached is 503 store_unavailable with Retry-After, its location left out', () => {
    const down = new HostError(
      'STATE_UNAVAILABLE',
      'the state store postgresql://paddock:***@db.internal:5432/paddock cannot be reached: connection refused',
    );
    const p = problemOf(down)!;
    expect([p.status, p.code, p.headers['retry-after']]).toEqual([503, 'store_unavailable', '1']);
    expect(p.detail).not.toMatch(/db\.internal|postgresql:/);
  });

  it('an unexpected error is not a problem of its own (the server answers the generic 500)', () => {
    expect(problemOf(new Error('secret path /etc/x'))).toBeUndefined();
    expect(problemOf(new HostError('STATE_CORRUPT', 'db broken'))).toBeUndefined();
    expect(problemOf('a string')).toBeUndefined();
  });

  it('a problem body has the RFC 9457 members, the code and the request id', () => {
    const body = problemBody(new ApiProblem(404, 'not_found', 'no run x'), { id: 'r1', url: '/v1/runs/x?y=1' });
    expect(body).toEqual({
      type: 'https://paddock.dev/problems/not_found',
      title: 'Not found',
      status: 404,
      detail: 'no run x',
      instance: '/v1/runs/x',
      requestId: 'r1',
      code: 'not_found',
    });
  });
});
