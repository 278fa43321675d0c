// The streams' shared scheduler: a time slice per event-loop turn, fair turns, coalesced requests. The clock is
// injected (a counter each pump advances), so what runs in which turn is exact.
import { describe, expect, it } from 'vitest';
import { PumpScheduler } from '../../../../host/api/streams/pumpScheduler.js';

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('PumpScheduler', () => {
  it('runs pumps until the slice is spent and leaves the rest to the next turn', async () => {
    let clock = 0;
    const scheduler = new PumpScheduler(10, () => clock);
    const ran: string[] = [];
    // Each pump "costs" 4 ms: a 10 ms slice runs three (4, 8, 12 ≥ 10) and stops.
    const pump = (name: string) => () => {
      ran.push(name);
      clock += 4;
    };
    for (const name of ['a', 'b', 'c', 'd', 'e', 'f', 'g']) scheduler.schedule(pump(name));
    expect(ran).toEqual([]); // never synchronously
    await turn();
    expect(ran).toEqual(['a', 'b', 'c']);
    expect(scheduler.waiting).toBe(4);
    await turn();
    expect(ran).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
    await turn();
    expect(ran).toEqual(['a', 'b', 'c', 'd', 'e', 'f', 'g']);
    expect(scheduler.waiting).toBe(0);
  });

  it('a pump asking again goes behind the others (fair turns); asking twice before it runs runs it once', async () => {
    let clock = 0;
    const scheduler = new PumpScheduler(100, () => clock);
    const ran: string[] = [];
    let aLeft = 3;
    const a = () => {
      ran.push('a');
      clock += 1;
      if (--aLeft > 0) scheduler.schedule(a); // a catch-up with more batches to read
    };
    const b = () => {
      ran.push('b');
      clock += 1;
    };
    scheduler.schedule(a);
    scheduler.schedule(a);
    scheduler.schedule(b);
    scheduler.schedule(b);
    await turn();
    await turn();
    expect(ran).toEqual(['a', 'b', 'a', 'a']);
  });

  it('a cancelled pump never runs; a pump that throws does not stop the others', async () => {
    const scheduler = new PumpScheduler(100);
    const ran: string[] = [];
    const gone = () => ran.push('gone');
    scheduler.schedule(() => {
      throw new Error('boom');
    });
    scheduler.schedule(gone);
    scheduler.schedule(() => ran.push('after'));
    scheduler.cancel(gone);
    await turn();
    expect(ran).toEqual(['after']);
  });
});
