/**
 * A run's stored events → the reply text an OpenAI client sees, piece by piece, and how the run ended. The reply is
 * what `paddock run` prints as the reply (host/cli/render.ts): `message.delta` texts and assistant `message` text
 * parts as they come; when the run streamed none, its result's output text at the end. Tool calls, progress, logs,
 * host notices and artifacts are not reply text. Reads stored events only: the store has redacted them.
 */
import type { StoredEvent, EventData } from '../../state/events.js';

/** How a run ended, as the endpoint answers it. */
export interface RunEnd {
  /** An outcome status (`completed`, `failed`, …) or `interrupted` (the host stopped under the run). */
  status: string;
  reason: string;
  usage?: EventData<'run.ended'>['usage'];
}

/** Reply text between two messages of one run (a runner's separate messages). */
export const MESSAGE_SEPARATOR = '\n\n';

type Part = { type: string; text?: unknown };
const textOf = (parts: readonly Part[]) =>
  parts
    .filter((p) => p.type === 'text' && typeof p.text === 'string')
    .map((p) => p.text as string)
    .join('');

/** Folds one run's stored events, in seq order, into reply text pieces and its end. */
export class RunReply {
  /** The reply text so far. */
  text = '';
  /** Set by the run's terminal event. */
  end: RunEnd | undefined;
  // The message the last text belonged to: a delta of another message id, or a whole `message`, starts a new one.
  private current: { id: string | undefined } | undefined;

  /** The reply text `event` adds ('' when it adds none). */
  take(event: StoredEvent): string {
    switch (event.type) {
      case 'run.update': {
        const { update } = event.data as EventData<'run.update'>;
        if (update.kind === 'message.delta') return this.add(update.text, update.messageId, false);
        if (update.kind === 'message' && (update.role ?? 'assistant') === 'assistant')
          return this.add(textOf(update.parts as Part[]), update.messageId, true);
        return '';
      }
      case 'run.ended': {
        const data = event.data as EventData<'run.ended'>;
        this.end = { status: data.status, reason: data.reason, usage: data.usage };
        // Nothing streamed: the result's output is the reply (as the CLI shows it).
        const output = data.result?.output?.parts;
        return this.text === '' && output ? this.add(textOf(output as Part[]), undefined, true) : '';
      }
      case 'run.interrupted': {
        const data = event.data as EventData<'run.interrupted'>;
        this.end = { status: 'interrupted', reason: data.reason };
        return '';
      }
      default:
        return '';
    }
  }

  private add(text: string, messageId: string | undefined, whole: boolean): string {
    if (!text) return '';
    const same = this.current !== undefined && !whole && this.current.id === messageId;
    const piece = this.text !== '' && !same ? `${MESSAGE_SEPARATOR}${text}` : text;
    // A whole message never continues: the next delta, whatever its id, is a new message.
    this.current = whole ? undefined : { id: messageId };
    this.text += piece;
    return piece;
  }
}
