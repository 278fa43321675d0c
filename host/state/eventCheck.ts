import { HostError } from '../errors.js';
import { EVENT_DATA, type EventType } from './events.js';

/**
 * Check an event's data against its type's schema (events.ts) before it is stored; throws `INVALID_INPUT` naming the
 * field. The commonest stored event by far — a `run.update` carrying a `message.delta`, thousands a second from a
 * streaming runner — is checked by hand first: the check below accepts only what the zod schema accepts (an object
 * with a positive safe-integer `runnerSeq` and an `update` object of kind `message.delta` with a string `text` and an
 * optional string `messageId`; other keys pass, as the schema lets them), and anything it does not accept goes to zod,
 * which decides and words the refusal. The protocol layer already checked the same update with the same schema; this
 * keeps the store's own check at a tenth of the cost instead of dropping it (test/unit/state/eventCheck.test.ts).
 */
export function checkEventData(type: EventType, data: unknown): void {
  if (type === 'run.update' && isPlainDelta(data)) return;
  const parsed = EVENT_DATA[type].safeParse(data);
  if (!parsed.success)
    throw new HostError(
      'INVALID_INPUT',
      `invalid ${type} event: ${parsed.error.issues[0]?.path.join('.')}: ${parsed.error.issues[0]?.message}`,
    );
}

/** `{ runnerSeq, update: { kind: 'message.delta', text, messageId? } }`, exactly as the schema takes it. */
function isPlainDelta(data: unknown): boolean {
  if (!isObject(data)) return false;
  const { runnerSeq, update } = data as { runnerSeq?: unknown; update?: unknown };
  if (!Number.isSafeInteger(runnerSeq) || (runnerSeq as number) < 1 || !isObject(update)) return false;
  const { kind, text, messageId } = update as { kind?: unknown; text?: unknown; messageId?: unknown };
  return (
    kind === 'message.delta' && typeof text === 'string' && (messageId === undefined || typeof messageId === 'string')
  );
}

function isObject(value: unknown): value is object {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
