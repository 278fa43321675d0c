// One Telegram message edited as a reply grows, within Telegram's edit limits: at most one edit per interval (a
// bot that edits faster is answered 429 "Too Many Requests"), never the same text twice (Telegram answers 400
// "message is not modified"), and never over Telegram's 4096-character message limit.
import { GrammyError } from 'grammy';

/** Telegram's longest message text. */
export const TELEGRAM_MAX_TEXT = 4096;

/** Cut `text` to what one Telegram message holds, saying so. */
export function fitTelegram(text: string): string {
  if (text.length <= TELEGRAM_MAX_TEXT) return text;
  let end = TELEGRAM_MAX_TEXT - 2;
  if (/[\uDC00-\uDFFF]/.test(text[end]!)) end--; // never half of a surrogate pair (an emoji)
  return `${text.slice(0, end)} …`;
}

/** Edits one message to the latest text it was given, throttled; `finish` sends the last text and waits for it. */
export class ThrottledEditor {
  private latest: string;
  private sent: string;
  private lastAt = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private chain: Promise<void> = Promise.resolve();

  /** `edit` sends one edit; `initial` is the text the message has now (the placeholder). */
  constructor(
    private readonly edit: (text: string) => Promise<unknown>,
    initial: string,
    private readonly intervalMs: number,
    private readonly onError: (error: unknown) => void = () => undefined,
  ) {
    this.latest = this.sent = initial;
  }

  /** The message should now read `text`: edited at once, or when the interval since the last edit has passed. */
  set(text: string): void {
    this.latest = fitTelegram(text);
    this.timer ??= setTimeout(() => this.flush(), Math.max(0, this.lastAt + this.intervalMs - Date.now()));
  }

  /** The last text: sent once the interval allows, after any edit in flight (tried up to three times). */
  async finish(text: string): Promise<void> {
    this.latest = fitTelegram(text);
    for (let attempt = 0; attempt < 3 && this.sent !== this.latest; attempt++) {
      await this.chain;
      clearTimeout(this.timer);
      this.flush(); // waits out the interval itself
      await this.chain;
    }
  }

  private flush(): void {
    this.timer = undefined;
    this.chain = this.chain.then(async () => {
      // A timer may fire a little early by the wall clock: the interval is a promise to Telegram, so wait it out.
      const early = this.lastAt + this.intervalMs - Date.now();
      if (early > 0) await new Promise((resolve) => setTimeout(resolve, early));
      const text = this.latest;
      if (text === this.sent) return;
      try {
        await this.edit(text);
        this.sent = text;
        // Counted from the answer, so Telegram sees the edits at least the interval apart whatever the latency.
        this.lastAt = Date.now();
      } catch (error) {
        // Too many edits anyway (other chats share the bot's limit): wait as told; the next edit sends the latest.
        const retryAfter = error instanceof GrammyError ? error.parameters.retry_after : undefined;
        this.lastAt = Date.now();
        if (retryAfter === undefined) return this.onError(error);
        this.lastAt = Date.now() + retryAfter * 1000 - this.intervalMs;
        this.timer ??= setTimeout(() => this.flush(), retryAfter * 1000);
      }
    });
  }
}
