// A "details" toggle whose content is made only while it is open: a run's stored events can be megabytes, and
// serialising every line's JSON on each render froze the tab (outside attack on issue 15, finding 4).
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';

/** `<details>` that renders `content()` only when opened. */
export function LazyDetails(props: { summary: string; content: () => ComponentChildren }) {
  const [open, setOpen] = useState(false);
  return (
    <details onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>{props.summary}</summary>
      {open ? props.content() : null}
    </details>
  );
}
