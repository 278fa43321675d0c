import type { ChatEvent, RunMessageResult } from '../protocol/types.js';

/**
 * Takes one user message that arrived while the run runs (`run/message`, the binding's steering `append`). Return
 * (or resolve) nothing or `true` once the message reached the running work: the run's result must then account for
 * it. Return `false` to refuse it: the host then starts an ordinary run for it, so nothing is lost. A throw refuses
 * it too.
 */
export type MessageHandler = (
  event: ChatEvent,
  info: { goalRevision: number },
) => boolean | void | Promise<boolean | void>;

/** One run's `run/message` handler: the run registers it (`ctx.onMessage`), the serving loop delivers to it. */
export class MessageSlot {
  private handler: MessageHandler | undefined;

  /** Register `handler` (it replaces an earlier one); returns the function that unregisters it. */
  set(handler: MessageHandler): () => void {
    this.handler = handler;
    return () => {
      if (this.handler === handler) this.handler = undefined;
    };
  }

  /**
   * The answer to one `run/message`: refused when no handler is registered, when it refuses or throws, and when the
   * run was over by the time it returned (a message the run ended without is the host's to run again).
   */
  async deliver(event: ChatEvent, goalRevision: number, isOpen: () => boolean): Promise<RunMessageResult> {
    const handler = this.handler;
    if (!handler || !isOpen()) return { accepted: false, reason: 'this run takes no messages now' };
    try {
      const taken = await handler(event, { goalRevision });
      if (!isOpen()) return { accepted: false, reason: 'the run ended before it took the message' };
      return taken === false ? { accepted: false, reason: 'the runner refused the message' } : { accepted: true };
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      return { accepted: false, reason: `the runner's message handler failed: ${why.slice(0, 500)}` };
    }
  }
}
