// Loading data for a page: the value, the error (shown with its reason), and a reload after an action.
import { useCallback, useEffect, useState } from 'preact/hooks';

/** The state of one load. */
export interface Load<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  /** Load again (after an action changed what the page shows). */
  reload: () => void;
}

/** Run `load` now and whenever `deps` change; a newer load wins over an older one still in flight. */
export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, deps: unknown[]): Load<T> {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const controller = new AbortController();
    setState((s) => ({ ...s, loading: true }));
    load(controller.signal).then(
      (data) => controller.signal.aborted || setState({ data, loading: false }),
      (error: unknown) => controller.signal.aborted || setState((s) => ({ data: s.data, error, loading: false })),
    );
    return () => controller.abort();
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}
