/**
 * The bindings of a tenant an OpenAI client reaches, as OpenAI `model` objects (`GET /v1/models`). Pure.
 */
import type { Binding } from '../../bindings/schema.js';
import { matchBinding, routeSpecificity } from '../../bindings/routing.js';
import type { ChatEvent } from '../../../sdk/protocol/types.js';
import { OPENAI_PLATFORM } from './request.js';

/** A binding's tenant (`default` when the binding names none). */
export function tenantOf(binding: Binding): string {
  return (binding as Binding & { tenant?: string }).tenant ?? 'default';
}

/** The shape of the events this endpoint dispatches for `model`, for route matching. */
export function probeEvent(model: string): ChatEvent {
  return {
    id: 'probe',
    type: 'message',
    platform: OPENAI_PLATFORM,
    bot: model,
    conversation: { type: 'private', id: 'probe' },
    sender: { id: 'probe' },
    message: { parts: [{ type: 'text', text: '' }] },
    receivedAt: new Date(0).toISOString(),
  };
}

/**
 * The binding `model` reaches among the tenant's bindings: the one routing says takes an OpenAI-compatible event
 * (platform `openai`, bot = `model`, a private conversation), and only when that is the binding named `model` — a
 * broader binding would otherwise answer for a model the client did not name. A route naming one conversation id
 * never matches (the conversation is the client's).
 */
export function reachableBinding(bindings: readonly Binding[], tenant: string, model: string): Binding | undefined {
  const own = bindings.filter((b) => tenantOf(b) === tenant);
  const routed = matchBinding(own, probeEvent(model));
  return routed?.id === model && routed.route.conversation.id === undefined ? routed : undefined;
}

/**
 * `GET /v1/models`: the enabled bindings of `tenant` this endpoint reaches, sorted by id — each binding's probe routed
 * as {@link reachableBinding} routes it, without a match over every binding per binding (quadratic in a tenant's
 * bindings: 3.4 s of a blocked server at 15 000). Only a binding whose route names no bot, or names the model as its
 * bot, can take a model's probe; the bot-less ones take every probe alike, so their winner is found once.
 */
export function modelList(bindings: readonly Binding[], tenant: string, created: (id: string) => number) {
  const own = bindings.filter((b) => tenantOf(b) === tenant);
  const byBot = new Map<string, Binding[]>();
  for (const b of own) {
    if (b.route.bot === undefined) continue;
    const bucket = byBot.get(b.route.bot);
    if (bucket) bucket.push(b);
    else byBot.set(b.route.bot, [b]);
  }
  const anyBot = matchBinding(
    own.filter((b) => b.route.bot === undefined),
    probeEvent(''),
  );
  const data = own
    .filter((b) => {
      if (!b.enabled) return false;
      const routed = preferred(anyBot, matchBinding(byBot.get(b.id) ?? [], probeEvent(b.id)));
      return routed === b && routed.route.conversation.id === undefined;
    })
    .map((b) => ({ id: b.id, object: 'model' as const, created: created(b.id), owned_by: `paddock:${tenant}` }))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { object: 'list' as const, data };
}

/**
 * What matchBinding would pick over both lists merged, given its pick of each: the more specific route. The two never
 * tie (the bot is a bit of its own in routeSpecificity: one pick's route names a bot, the other's does not).
 */
function preferred(anyBot: Binding | undefined, named: Binding | undefined): Binding | undefined {
  if (!anyBot || !named) return anyBot ?? named;
  return routeSpecificity(named.route) > routeSpecificity(anyBot.route) ? named : anyBot;
}
