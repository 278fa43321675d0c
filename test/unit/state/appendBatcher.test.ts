import { describe, expect, it } from 'vitest';
import { AppendBatcher } from '../../../host/state/appendBatcher.js';
import { tempStore } from '../../helpers/store.js';
import { refuseInserts } from '../../helpers/rawDb.js';

describe('AppendBatcher', () => {
  it(
    'a flush never throws: an event the store refuses goes to onError, the rest of the batch commits and its ' +
      'callbacks run',
    async () => {
      const { store } = tempStore();
      const { sessionId } = store.ensureSession('default', 'b', 'k');
      // A real refusal of one event by the database (as a CHECK, a full disk or any store error would).
      refuseInserts(store, 'events', "NEW.data LIKE '%poison%'", 'refused');
      const errors: string[] = [];
      const committed: string[] = [];
      const batcher = new AppendBatcher(store, (error, event) =>
        errors.push(`${(event.data as { update: { message: string } }).update.message}: ${(error as Error).message}`),
      );
      for (const message of ['one', 'poison', 'three']) {
        batcher.add(
          sessionId,
          { type: 'run.notice', runId: 'run_x', data: { update: { kind: 'log', level: 'info', message } } },
          () => {
            if (message === 'three') throw new TypeError('a listener failed');
            committed.push(message);
          },
        );
      }
      // The scheduled flush runs from setImmediate, where a throw would crash the process.
      await new Promise((resolve) => setImmediate(resolve));
      expect(errors).toEqual(['poison: refused', 'three: a listener failed']);
      expect(committed).toEqual(['one']);
      const stored = store
        .readEvents(sessionId)
        .filter((e) => e.type === 'run.notice')
        .map((e) => (e.data as { update: { message: string } }).update.message);
      expect(stored).toEqual(['one', 'three']);
      store.close();
    },
  );
});
