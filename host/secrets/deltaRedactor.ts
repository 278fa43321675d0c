import type { Update } from '../../sdk/protocol/types.js';
import type { Redactor } from './redactor.js';

/** Updates that end every open text stream (the message is over); `log`, `progress` and `usage` do not. */
const ENDS_MESSAGE = new Set<Update['kind']>(['message', 'tool.started', 'tool.finished', 'artifact']);

/**
 * One run's `message.delta` text, made safe in every concatenation a reader makes
 * (docs/security-model.md, "Redaction"): each message (by `messageId`) is one chunk-safe stream
 * over its concatenated deltas, so a secret split across deltas is caught. Each delta that goes
 * out carries only the text that is safe so far; the last characters of a message (as many as the
 * longest secret form) are held back until its next delta, or until the message ends — another
 * update that ends messages, or the run's end — when they go out as one more delta of that
 * message. The stored events, the streams clients read (the CLI, `--json`) and the transcript all
 * get these deltas, so concatenating them never joins a secret back together.
 */
export class DeltaRedactor {
  private readonly open = new Map<string | undefined, ReturnType<Redactor['stream']>>();

  constructor(private readonly redactor: Redactor) {}

  /**
   * What to store and stream, in order, for one update from the runner (other kinds pass through; redact them as
   * usual).
   */
  update(update: Update): Update[] {
    if (update.kind !== 'message.delta') return ENDS_MESSAGE.has(update.kind) ? [...this.end(), update] : [update];
    let stream = this.open.get(update.messageId);
    if (!stream) this.open.set(update.messageId, (stream = this.redactor.stream()));
    return [{ ...update, text: stream.push(update.text) }];
  }

  /**
   * The held-back ends of every open message, as one last delta each (call when messages end, and at the end of the
   * run).
   */
  end(): Update[] {
    const out: Update[] = [];
    for (const [messageId, stream] of this.open) {
      const text = stream.end();
      if (text) out.push({ kind: 'message.delta', ...(messageId !== undefined ? { messageId } : {}), text });
    }
    this.open.clear();
    return out;
  }
}
