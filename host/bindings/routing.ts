import type { ChatEvent } from '../../sdk/protocol/types.js';
import type { Binding, Route } from './schema.js';

/** How specific a route is: each field set outranks every combination of less specific ones. */
export function routeSpecificity(route: Route): number {
  return (
    (route.conversation.id !== undefined ? 8 : 0) +
    (route.conversation.type !== undefined ? 4 : 0) +
    (route.bot !== undefined ? 2 : 0) +
    (route.platform !== undefined ? 1 : 0)
  );
}

/** A route's match fields, as one comparable string (event types aside). */
export function routeKey(route: Route): string {
  return JSON.stringify([
    route.platform ?? null,
    route.bot ?? null,
    route.conversation.type ?? null,
    route.conversation.id ?? null,
  ]);
}

/** Whether two routes share an event type. */
export function routesOverlap(a: Route, b: Route): boolean {
  return a.eventTypes.some((t) => b.eventTypes.includes(t));
}

/** Whether `route` takes `event`. */
export function routeMatches(route: Route, event: ChatEvent): boolean {
  return (
    route.eventTypes.includes(event.type) &&
    (route.platform === undefined || route.platform === event.platform) &&
    (route.bot === undefined || route.bot === event.bot) &&
    (route.conversation.type === undefined || route.conversation.type === event.conversation.type) &&
    (route.conversation.id === undefined || route.conversation.id === event.conversation.id)
  );
}

/**
 * The binding for an event: the most specific matching route, enabled or not (a disabled binding
 * refuses its events rather than letting a broader binding take them). Undefined if none matches.
 */
export function matchBinding(bindings: readonly Binding[], event: ChatEvent): Binding | undefined {
  let best: Binding | undefined;
  for (const b of bindings) {
    if (!routeMatches(b.route, event)) continue;
    const score = routeSpecificity(b.route);
    const bestScore = best ? routeSpecificity(best.route) : -1;
    // Equal routes can only both match when one is disabled (apply refuses two enabled ones): prefer the enabled one.
    if (score > bestScore || (score === bestScore && b.enabled && !best!.enabled)) best = b;
  }
  return best;
}
