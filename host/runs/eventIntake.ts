import { ChatEventSchema } from '../../sdk/protocol/schemas/event.js';
import type { ChatEvent } from '../../sdk/protocol/types.js';
import type { HostLimits } from '../config/limits.js';
import { HostError } from '../errors.js';
import { fieldPath } from '../util/fieldPath.js';

/**
 * Take one chat event into the host — the one intake of dispatch, `paddock run` and anything that
 * reuses them: its JSON size against `limits.maxChatEventBytes` first (so an oversized event is
 * never parsed further, stored or sent), then its shape. Throws `INVALID_INPUT` with
 * `data.reason` `event_too_large` (naming the limit and the size) or `invalid_event` (naming the field).
 */
export function takeChatEvent(input: unknown, limits: Pick<HostLimits, 'maxChatEventBytes'>): ChatEvent {
  const max = limits.maxChatEventBytes;
  const bytes = eventBytes(input);
  if (bytes > max) {
    throw new HostError(
      'INVALID_INPUT',
      `event is ${bytes} bytes; the host takes at most ${max} bytes (limits.maxChatEventBytes)`,
      { reason: 'event_too_large', limit: 'maxChatEventBytes', bytes, maxBytes: max },
    );
  }
  const parsed = ChatEventSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = `event.${fieldPath(issue.path)}`.replace(/\.$/, '');
    throw new HostError('INVALID_INPUT', `${field}: ${issue.message}`, { reason: 'invalid_event', field });
  }
  return parsed.data;
}

/** The UTF-8 size of `input` as JSON (what is stored and sent); 0 for what JSON cannot hold (the schema refuses it). */
function eventBytes(input: unknown): number {
  try {
    return Buffer.byteLength(JSON.stringify(input) ?? '');
  } catch {
    return 0;
  }
}
