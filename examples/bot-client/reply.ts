// A run's events → the reply text a chat user should see, as it grows: what `paddock run` prints as the reply
// (docs/http-api.md, "The reply"): `message.delta` texts and assistant `message` text parts, in order, two
// messages apart by a blank line; when the run streamed none, its result's output text. Tool calls, progress and
// logs are not reply text.
import type { PaddockEvent } from './client.js';

type Part = { type: string; text?: unknown };
const textOf = (parts: unknown) =>
  Array.isArray(parts)
    ? (parts as Part[])
        .filter((p) => p.type === 'text' && typeof p.text === 'string')
        .map((p) => p.text as string)
        .join('')
    : '';

/** Folds a run's events, in order, into its reply text and, once it ended, its outcome. */
export class Reply {
  /** The reply so far. */
  text = '';
  /** Set by `run.ended` (`completed`, `failed`, `cancelled`, …) or `run.interrupted` (the host stopped). */
  outcome: { status: string; reason: string } | undefined;
  private message: string | undefined | null = null; // the id of the message being streamed; null: none

  /** Take one event; true when it changed the text. */
  take(event: PaddockEvent): boolean {
    const data = event.data;
    if (event.type === 'run.update') {
      const update = data.update as { kind: string; text?: string; messageId?: string; role?: string; parts?: unknown };
      if (update.kind === 'message.delta') return this.add(update.text ?? '', update.messageId, false);
      if (update.kind === 'message' && (update.role ?? 'assistant') === 'assistant')
        return this.add(textOf(update.parts), undefined, true);
    } else if (event.type === 'run.ended') {
      this.outcome = { status: String(data.status), reason: String(data.reason) };
      const result = data.result as { output?: { parts?: unknown } } | undefined;
      if (this.text === '') return this.add(textOf(result?.output?.parts), undefined, true);
    } else if (event.type === 'run.interrupted') {
      this.outcome = { status: 'interrupted', reason: String(data.reason) };
    }
    return false;
  }

  private add(text: string, messageId: string | undefined, whole: boolean): boolean {
    if (!text) return false;
    const sameMessage = !whole && this.message !== null && this.message === messageId;
    this.text += this.text !== '' && !sameMessage ? `\n\n${text}` : text;
    this.message = whole ? null : messageId;
    return true;
  }
}
