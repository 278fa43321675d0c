// A run's status as a badge: green when it completed, amber while it waits or runs, red otherwise.
/** The badge of run status `status` (with its reason in the title). */
export function RunStatus({ status, reason }: { status: string | null; reason?: string | null }) {
  const s = status ?? 'unknown';
  const tone = s === 'completed' ? 'ok' : s === 'queued' || s === 'running' || s === 'cancelled' ? 'warn' : 'bad';
  return (
    <span class={`badge ${tone}`} title={reason ?? undefined}>
      {s}
    </span>
  );
}
