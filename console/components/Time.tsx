// A time shown in the viewer's zone, with the UTC instant in its title and datetime attribute.
import { localTime, relativeTime } from '../lib/format.js';

/** `<time>` of an ISO instant; `relative` shows "3 min ago" (the local time goes in the title). */
export function Time({ at, relative = false }: { at: string | null | undefined; relative?: boolean }) {
  if (!at) return <span class="muted">—</span>;
  const local = localTime(at);
  return (
    <time dateTime={at} title={relative ? `${local} (${at})` : at}>
      {relative ? relativeTime(at) : local}
    </time>
  );
}
