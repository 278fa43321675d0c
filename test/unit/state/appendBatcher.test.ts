import { describe, expect, it } from 'vitest';
import { AppendBatcher } from '../../../host/state/appendBatcher.js';
import { tempStore } from '../../helpers/store.js';
import { rawDb } from '../../helpers/rawDb.js';

describe('AppendBatcher', () => {
  it(
    'a flush never throws: an event the store refuses goes to onError, the rest of the batch commits and its ' +
      'callbacks run',
    async () => {
      const { store } = tempStore();
      const { sessionId } = store.ensureSession('default', 'b', 'k');
      // A real SQLite refusal of one event (as a CHECK, a full disk or any store error would).
      rawDb(store).exec(
        `CREATE TRIGGER poison BEFORE INSERT ON events WHEN NEW.data LIKE '%poison%' BEGIN SELECT RAISE(ABORT, ` +
          `'refused'); END`,
      );
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
