import type { Counter, Histogram } from 'prom-client';
import { LIMIT_HITS, OUTCOME_STATUSES } from '../../process/outcome.js';
import type { EventData, StoredEvent } from '../../state/events.js';
import type { Store } from '../../state/store.js';
import { BINDING_ID, CappedLabel, fixedLabel } from './labels.js';

/** The run metrics a committed event moves. */
export interface RunMetrics {
  runs: Counter<'outcome' | 'binding'>;
  duration: Histogram<'binding'>;
  kills: Counter<'limit'>;
}

const outcomeLabel = fixedLabel([...OUTCOME_STATUSES, 'interrupted']);
const limitLabel = fixedLabel(LIMIT_HITS);

/**
 * Count the runs of this process as their ends commit (the store's listener hears only this process's commits):
 * `run.ended` by status, `run.interrupted` as `interrupted`; the duration from `run.started` to the end (runs that
 * never started observe none); every limit `run.ended` names as having acted on the run. The binding comes from
 * the run's view row, which the same transaction updated. Returns the unsubscribe function.
 */
export function feedRunMetrics(store: Store, m: RunMetrics, maxBindings: number): () => void {
  const binding = new CappedLabel(BINDING_ID, maxBindings);
  return store.subscribe((event: StoredEvent) => {
    if ((event.type !== 'run.ended' && event.type !== 'run.interrupted') || !event.runId) return;
    const row = store.run(event.runId);
    const b = binding.value(row?.bindingId ?? 'none');
    if (event.type === 'run.interrupted') {
      m.runs.inc({ outcome: 'interrupted', binding: b });
    } else {
      const data = event.data as EventData<'run.ended'>;
      m.runs.inc({ outcome: outcomeLabel(data.status), binding: b });
      // Each limit once per run, whatever the event says (its schema allows repeats).
      for (const limit of new Set(data.limits ?? [])) m.kills.inc({ limit: limitLabel(limit) });
    }
    if (row?.startedAt) {
      const seconds = (Date.parse(event.at) - Date.parse(row.startedAt)) / 1000;
      if (Number.isFinite(seconds) && seconds >= 0) m.duration.observe({ binding: b }, seconds);
    }
  });
}
