// A followed event stream as page state: every stored event in seq order (a resumed stream never repeats one), and
// how the stream ended.
import { useEffect, useState } from 'preact/hooks';
import type { Api } from './api.js';
import type { StoredEvent } from './events.js';
import { followStream, type StreamEnd } from './sse.js';

/** The events of the stream so far, whether it is still open, and its end. */
export interface EventStream {
  events: StoredEvent[];
  open: boolean;
  end: StreamEnd | undefined;
}

/** Follow `path` (a run's or session's events) while the component is shown. */
export function useEventStream(api: Api, path: string): EventStream {
  const [state, setState] = useState<EventStream>({ events: [], open: true, end: undefined });
  useEffect(() => {
    const controller = new AbortController();
    let seen = 0;
    setState({ events: [], open: true, end: undefined });
    void followStream(
      api,
      path,
      (message) => {
        let event: StoredEvent;
        try {
          event = JSON.parse(message.data) as StoredEvent;
        } catch {
          return;
        }
        // The server resumes after Last-Event-ID; the guard only keeps a replay from showing twice.
        if (typeof event.seq !== 'number' || event.seq <= seen) return;
        seen = event.seq;
        setState((s) => ({ ...s, events: [...s.events, event] }));
      },
      controller.signal,
    ).then((end) => controller.signal.aborted || setState((s) => ({ ...s, open: false, end })));
    return () => controller.abort();
  }, [api, path]);
  return state;
}
