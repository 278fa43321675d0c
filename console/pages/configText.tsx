// Configuration values as a person reads them: a route as a sentence, a list or "none", an enabled badge.
import type { BindingSpec } from './configTypes.js';

/** The events a route takes, in words; an omitted field reads "any". */
export function routeText(route: BindingSpec['route']): string {
  const r = route ?? {};
  const conversation = r.conversation ?? {};
  const parts = [
    r.platform ? `platform ${r.platform}` : 'any platform',
    r.bot ? `bot ${r.bot}` : 'any bot',
    conversation.id
      ? `conversation ${conversation.id}`
      : conversation.type
        ? `${conversation.type} conversations`
        : 'any conversation',
    `${(r.eventTypes ?? ['message']).join(', ')} events`,
  ];
  return parts.join(' · ');
}

/** A list as a sentence, or "none" in grey. */
export function listOrNone(items: readonly string[] | undefined) {
  return items && items.length > 0 ? items.join(', ') : <span class="muted">none</span>;
}

/** "enabled" / "disabled" as a badge. */
export function EnabledBadge({ enabled }: { enabled: boolean }) {
  return enabled ? <span class="badge ok">enabled</span> : <span class="badge bad">disabled</span>;
}
